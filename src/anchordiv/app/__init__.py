"""The application layer: the ``anchordiv`` command line (:mod:`.cli`, :mod:`.commands`), the
studies (:mod:`.studies`), their reports (:mod:`.report`) and prior building (:mod:`.build`)."""
