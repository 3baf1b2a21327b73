"""The features that act on a call through the pipeline's hooks: images, speculation
(``prefetch``), hedging, telemetry (``otel``). A feature sees a Port, never the client: it
imports nothing of ``llmclient._client``, ``llmclient.api`` or the pipelines."""
