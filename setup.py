"""The optional compiled loops of ``rocketpipe.store.batch_encoder``, ``rocketpipe.store.index_file``,
``rocketpipe.protocol.message`` and ``rocketpipe.protocol.header_json`` (everything else is in
pyproject.toml).

``optional=True``: without a C compiler or zlib's headers the build goes on without it and the
pure-Python loop is used; the package behaves the same either way.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "rocketpipe.store._batch_records",
            ["src/rocketpipe/store/_batch_records.c"],
            libraries=["z"],
            optional=True,
        ),
        Extension("rocketpipe.store._index_put", ["src/rocketpipe/store/_index_put.c"], optional=True),
        Extension(
            "rocketpipe.protocol._records", ["src/rocketpipe/protocol/_records.c"], libraries=["z"], optional=True
        ),
        Extension("rocketpipe.protocol._header", ["src/rocketpipe/protocol/_header.c"], optional=True),
    ]
)
