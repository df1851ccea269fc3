"""The workload: what the local runs send the pipeline. The orders of every kind and their mix (``orders``), the
hostile inputs (``hostile``), the producer that puts orders on the queue or starts executions (``producer``) and
the order API's signed client (``api_client``). The lowest layer of the harness: it imports nothing of the rest."""
