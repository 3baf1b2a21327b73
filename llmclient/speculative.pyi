# For type checkers in the checkout, not installed. At run time llmclient.speculative is the
# repository's top-level speculative/ folder (pyproject.toml maps it: [tool.setuptools.package-dir]);
# an editable install maps it with an import hook, which mypy does not follow, so without this
# file mypy would take llmclient.speculative for a missing module (Any). It re-exports the package
# mypy checks as `speculative`. The wheel holds the package itself, not this file.
from speculative import *  # noqa: F403
from speculative import __all__ as __all__
