from hypothesis import given
from hypothesis import HealthCheck
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from lsrp.device import verify

SIZE = 512


@st.composite
def runs(draw):
    cuts = sorted(draw(st.sets(st.integers(0, SIZE), max_size=12)))
    out = []
    for start, end in zip(cuts[::2], cuts[1::2]):
        if draw(st.booleans()):
            out.append(['d', start, end - start, 'c%d' % draw(
                st.integers(0, 3))])
        else:
            out.append(['z', start, end - start])
    return out


def apply_model(state, rs):
    for r in rs:
        for i in range(r[1], r[1] + r[2]):
            state[i] = (r[3], i - r[1]) if r[0] == 'd' else None
    return state


def from_segments(segments):
    state = [None] * SIZE
    for s, e, d, c in segments:
        for i in range(s, e):
            state[i] = (d, i - c) if d else None
    return state


class TestOverlay(testtools.TestCase):

    # NOTE: on a machine shared by many jobs one draw stalled for a second
    # and the health check failed the test: time is not what it checks.
    @settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.lists(runs(), max_size=4))
    def test_overlay_matches_byte_model(self, versions):
        model = [None] * SIZE
        segments = []
        for rs in versions:
            model = apply_model(model, rs)
            segments = verify.overlay(segments, rs)
            self.assertEqual(model, from_segments(segments))
            starts = [s[0] for s in segments]
            self.assertEqual(sorted(starts), starts)
