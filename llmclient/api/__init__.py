"""The API surface: resources, pass-through to the official client, Azure, the module-level
client, the response models and the Response / Stream objects. It stands on the pipeline
(``llmclient.pipeline``); users reach it through ``llmclient``'s public names, not this path."""
