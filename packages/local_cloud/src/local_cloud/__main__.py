"""``python -m local_cloud up|run --assembly <cdk.out> --stack <name>`` (:mod:`local_cloud.cli`)."""

import sys

from local_cloud.cli import main

sys.exit(main())
