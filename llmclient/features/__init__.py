"""The features the chain's layers ask (``llmclient/layers``): images, speculation
(``prefetch``), hedging, telemetry (``otel``). A feature sees a Port, never the client: it
imports nothing of ``llmclient._client``, ``llmclient.api`` or the pipelines."""
