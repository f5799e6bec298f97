"""raylab's Hydra config tree, installed as the package ``raylab.conf`` (searched as ``pkg://raylab.conf``)."""
