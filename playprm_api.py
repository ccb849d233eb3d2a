# clemcore looks for <backend>_api.py in the working directory: this makes the "playprm" backend available to
# `clem run` from the repository root (see playprm.models.clemcore_backend; `playprm register` writes this file).
from playprm.models.clemcore_backend import PlayprmBackend  # noqa: F401
