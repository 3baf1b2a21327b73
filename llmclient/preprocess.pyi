# For type checkers in the checkout, not installed. At run time llmclient.preprocess is the
# repository's top-level preprocess/ folder (pyproject.toml maps it: [tool.setuptools.package-dir]);
# an editable install maps it with an import hook, which mypy does not follow, so without this
# file mypy would take llmclient.preprocess for a missing module (Any). It re-exports the package
# mypy checks as `preprocess`. The wheel holds the package itself, not this file.
from preprocess import *  # noqa: F403
from preprocess import __all__ as __all__
