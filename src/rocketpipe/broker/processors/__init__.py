"""Broker request processors (L3): thin async handlers, one module per area.

Each module exposes a class taking the broker as a
:class:`~rocketpipe.broker.context.BrokerContext` (never ``broker.py`` itself, which composes
them) and a ``register(router)`` method; handlers decode the header, call broker services and
encode the response. Header decoding failures raise :class:`~rocketpipe.errors.HeaderError`,
which the router answers with SYSTEM_ERROR.
"""
