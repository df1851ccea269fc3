"""A local data plane for a CloudFormation REST API (``AWS::ApiGateway::*``), served on 127.0.0.1.

Why hand-written: moto 5.2.5's API Gateway cannot call SQS from an ``AWS`` integration nor render
mapping templates (its data plane posts the body unchanged to ``dynamodb:action/*`` only), and no
maintained library serves a CloudFormation REST API's AWS integrations with VTL in-process:
LocalStack's API Gateway ("APIGW NG") needs its whole runtime (its own service provider, router
and state store). What is ours here is the request pipeline; the Velocity engine is airspeed
(:mod:`.vtl`), JSON Schema draft-04 validation is fastjsonschema, SigV4 is botocore's signer.

- :mod:`.model`: the template's RestApi, Resource, Method, Model, RequestValidator,
  GatewayResponse, Stage, Deployment and UsagePlan resources, resolved;
- :mod:`.vtl`: ``$input``, ``$util`` and ``$context`` for mapping templates, rendered by airspeed;
- :mod:`.validation`: required method request parameters and the body against the method's model;
- :mod:`.auth`: ``AWS_IAM`` authorization (a SigV4 signature for ``execute-api``);
- :mod:`.integrations`: ``AWS`` integrations (SQS ``path/``, DynamoDB ``action/``) made as the
  integration's role, its identity policies evaluated as :mod:`local_cloud.iam` does for functions;
- :mod:`.gateway`: one request through the pipeline (route, size, auth, throttling, validation,
  integration request, call, integration response, gateway responses, access log);
- :mod:`.http`: the request and response, headers, media types, path matching for routing;
- :mod:`.mapping`: parameter mappings (where a mapped header's value comes from);
- :mod:`.gateway_responses`: API Gateway's own errors, as the template customises them;
- :mod:`.server`: a ``ThreadingHTTPServer`` on 127.0.0.1 in front of it.
"""
