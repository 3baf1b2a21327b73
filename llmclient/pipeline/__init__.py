"""The pipeline core, one call's journey as plain data and pure decisions: the Call
(``call``), the parts the sync and async pipelines share and the Port features see
(``shared``), the features' hooks (``hooks``), retry policy, timings and tracing."""
