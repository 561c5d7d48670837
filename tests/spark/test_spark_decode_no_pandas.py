"""The Spark source's decoding builds its Arrow arrays without pyarrow's Python conversions, which
import pandas (a subprocess, since the test process has pandas loaded already)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

_NO_PANDAS_SCRIPT = """
import sys, zlib
from rocketpipe.protocol import sysflag as sf
from rocketpipe.protocol.message import encode_record
from rocketpipe.spark.decode import decode_records_to_batch
from rocketpipe.spark.reader import _with_tags

def rec(offset, **kw):
    fields = dict(topic="T", body=b"b" * (offset + 1), properties={"TAGS": f"t{offset % 2}", "UNIQ_KEY": f"U{offset}"},
                  queue_id=1, queue_offset=offset, physical_offset=100 * offset, born_timestamp=1, store_timestamp=2,
                  born_host="10.0.0.1:1", store_host="10.0.0.2:10911", reconsume_times=0)
    fields.update(kw)
    return encode_record(**fields)

buf = b"".join([
    rec(0), rec(1, properties={"A": "1", "TAGS": "t1"}), rec(2, store_host="[fe80::1]:10911", properties={}),
    rec(3, body=zlib.compress(b"z" * 100), sys_flag=sf.COMPRESSED_FLAG | sf.COMPRESSION_ZLIB),
    rec(4, properties="A\\x01x\\x02A\\x01y\\x02TAGS\\x01t0"),
])
batch = decode_records_to_batch(buf, broker_name="b", start_offset=1, end_offset=5)
assert batch.num_rows == 4, batch.num_rows
assert _with_tags(batch, frozenset({"t1"})).num_rows == 2  # offsets 1 and 3
assert decode_records_to_batch(b"", broker_name="b").num_rows == 0
assert "pandas" not in sys.modules, "decoding imported pandas"
"""


@pytest.mark.parametrize("pure", ["0", "1"])
def test_decoding_never_imports_pandas(pure: str) -> None:
    """pyarrow imports pandas on its first conversion of Python or numpy values (0.4 s of CPU);
    a Spark worker that only yields Arrow batches never pays it unless the decoder does."""
    env = {**os.environ, "ROCKETPIPE_PURE_PYTHON": pure}
    done = subprocess.run(
        [sys.executable, "-c", _NO_PANDAS_SCRIPT], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
