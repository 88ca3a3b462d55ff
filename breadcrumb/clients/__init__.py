"""The clients of the query service and of the event topics, together (issue 48 part 2):
``sdk`` (the Python SDK, public as :mod:`breadcrumb.sdk`) and its models (``sdk_models``),
the publishers (``publishers``: Kafka and what both share; ``publishers_http``:
``POST /v1/events``), and ``service``: the CLI's calls to a running service over HTTP or
to a data dir in-process. Importing this package loads nothing: each module imports what
it needs."""
