"""The remoting protocol, sans-IO (L1): codes, commands, frames, header codecs, typed headers,
JSON bodies and the binary message encodings.

Nothing here imports asyncio, socket or threading; submodules are imported explicitly
(``rocketpipe.protocol.frame``, ``rocketpipe.protocol.headers``, ``rocketpipe.protocol.bodies``…).
"""
