"""The public Python API's own modules: `run_study` (api/run.py), `results` and the tidy
DataFrames (api/results.py, api/frames.py), progress reporting (api/progress.py).
`nettune/__init__.py` exports the public names lazily; docs/api.md walks through them."""
