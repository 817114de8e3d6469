"""Generators of the docs site's reference pages, each from the code that holds the facts.

One module per page, each a pure function from the code to the page's Markdown: the config document (the pydantic
models), the CLI (the argument parsers), the alerts (the PrometheusRule's table), the components (the component
provider's schema), the compatibility matrix (the versions the code pins) and the apply order (the render). `python
-m tools.docgen` writes them under docs/reference/ (`make docs` runs it); `--check` fails, naming each page, when a
committed page is not what its generator makes, and a test runs that check, so a page cannot drift from the code.
"""
