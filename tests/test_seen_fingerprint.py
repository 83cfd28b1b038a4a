"""The fingerprint reads whatever a crashed program printed: any text gives a fingerprint that can
be stored, and the changes a rerun makes do not change it."""

from __future__ import annotations

import json

from hypothesis import example, given, settings
from hypothesis import strategies as st

from kbgen.fingerprint import fingerprint_of

LOG = (
    "Traceback (most recent call last):\n"
    '  File "/home/{user}/proj/train.py", line {line}, in main\n'
    "    loss = model(batch)\n"
    '  File "/opt/conda/lib/python3.11/site-packages/torch/nn/modules/module.py", line {line2}, '
    "in _call_impl\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {size} MiB. GPU {gpu} has a total "
    "capacity of 23.69 GiB\n"
)


@settings(max_examples=150, deadline=None)
@example("\ud800")  # a lone surrogate: RE2 reads UTF-8, which cannot hold one
@given(st.text(st.characters(exclude_categories=()), max_size=3000))  # lone surrogates too
def test_any_text_gives_a_fingerprint_that_can_be_stored(text: str) -> None:
    found = fingerprint_of(text)
    stored = json.loads(found.model_dump_json())
    assert stored == json.loads(found.model_dump_json())  # the same text, the same record
    assert fingerprint_of(text) == found


@settings(max_examples=60, deadline=None)
@given(
    st.text(alphabet="abcxyz", min_size=1, max_size=8),
    st.integers(1, 99999),
    st.integers(1, 99999),
    st.integers(1, 4096),
    st.integers(0, 7),
)
def test_a_rerun_on_another_machine_keeps_the_fingerprint(
    user: str, line: int, line2: int, size: int, gpu: int
) -> None:
    first = fingerprint_of(LOG.format(user="alice", line=31, line2=1501, size=20, gpu=0))
    again = fingerprint_of(LOG.format(user=user, line=line, line2=line2, size=size, gpu=gpu))
    assert again == first
