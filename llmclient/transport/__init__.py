"""The connections, per origin: HTTP/1.1 (``http1``), HTTP/2 (``http2``), TLS, connect,
proxies, the origin records and the httpx transport that routes a request to its lane
(``lanes``). The transport knows nothing of the pipeline, the features or the API."""
