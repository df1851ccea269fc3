"""local_cloud: a local AWS emulator on moto, in one process, for serverless CDK apps.

- :mod:`local_cloud.emulator`: the entry point: a cloud assembly and options in, a running
  deployment's handles out (:class:`~local_cloud.emulator.LocalCloud`);
- :mod:`local_cloud.environment`: moto in-process, made to behave like AWS where it matters;
- :mod:`local_cloud.deploy`, :mod:`local_cloud.deploy_plan`, :mod:`local_cloud.template`: the
  template's resources built in moto, its intrinsics resolved;
- :mod:`local_cloud.lambda_runtime`, :mod:`local_cloud.event_sources`: handlers run in-process,
  SQS event source mappings on a simulated clock (:mod:`local_cloud.clock`);
- :mod:`local_cloud.iam_enforce`, :mod:`local_cloud.limits_enforce`: the template's IAM policies
  and AWS's quotas checked on every call;
- :mod:`local_cloud.patches`: every patch of a third-party internal, with its canary.

It imports nothing of the app that uses it. Submodules are imported on demand.
"""

__version__ = "0.1.0"
