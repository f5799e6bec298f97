"""An example of your own environment and model for raylab (docs/own-env-model.md).

- ``raylab_corridor.envs`` registers ``Corridor-v0`` with gymnasium on import:
  ``env=gymnasium env.id=raylab_corridor.envs:Corridor-v0``;
  and has a factory: ``env=custom env.factory=raylab_corridor.envs:make_corridor env.options.length=12``.
- ``raylab_corridor.models.make_model``: ``model=custom model.factory=raylab_corridor.models:make_model``.

Make it importable where raylab runs (``pip install -e examples/corridor``, or
``PYTHONPATH=examples/corridor``) and in every Ray node's Python (the embedded local Ray inherits both).
"""
