"""Training MNIST models with the Learner, the same code natively and in a web page.

`run.py` holds the settings and the training run; `models.py` the models a run can train (the
guide CNN and a small MLP). The page's side (data placement, browser storage, the Stop button,
the dashboard's events) is `pyrite.wasm.training`; the page itself is `page/` (`/train`).
"""
