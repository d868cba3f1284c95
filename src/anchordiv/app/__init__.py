"""The application layer: the ``anchordiv`` command line (:mod:`.cli`, one module per
subcommand in :mod:`.commands`), the studies and the main job (:mod:`.studies`), their reports
(:mod:`.report`) and prior building from vocabularies (:mod:`.build`).
"""
