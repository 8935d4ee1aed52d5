"""calc.sim.events: the event heap's order."""

from hypothesis import given, strategies as st

from calc.sim.events import ARRIVAL, STEP_END, EventQueue


def test_ties_go_by_priority_then_insertion():
    q = EventQueue()
    q.push(10, STEP_END, "end-1")
    q.push(10, ARRIVAL, "arrive-1")
    q.push(10, STEP_END, "end-2")
    q.push(10, ARRIVAL, "arrive-2")
    assert [q.pop()[2] for _ in range(4)] == ["arrive-1", "arrive-2", "end-1", "end-2"]


@given(st.lists(st.tuples(st.integers(0, 1000), st.sampled_from([ARRIVAL, STEP_END])), max_size=60))
def test_pops_come_out_sorted_and_payloads_are_never_compared(events):
    q = EventQueue()
    for t, kind in events:
        q.push(t, kind, object())  # objects do not compare: the sequence number must break ties
    out = [q.pop()[:2] for _ in range(len(events))]
    assert out == sorted(out)
    assert q.peek_time() is None
