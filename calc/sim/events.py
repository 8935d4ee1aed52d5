"""The simulation clock: a heap of events ordered by (time, priority, sequence number).

Times are integer nanoseconds, so no float rounding can reorder two events
between CPython versions; ``priority`` breaks ties between kinds of event at
the same instant (arrivals before step ends, so a request arriving exactly as
a step ends is seen by the next step); the sequence number breaks the rest in
insertion order, so the payload is never compared. Source: the standard
discrete-event simulation loop (e.g. Law, *Simulation Modeling and Analysis*,
ch. 1, next-event time advance); ties at one time go by priority, then by
insertion order (as SimPy's ``(time, priority, id)`` heap entries do).

>>> q = EventQueue()
>>> q.push(20, STEP_END, "step"); q.push(20, ARRIVAL, "request"); q.push(5, STEP_END, "early")
>>> [q.pop()[2] for _ in range(len(q))]
['early', 'request', 'step']
"""

from __future__ import annotations

import heapq

__all__ = ["ARRIVAL", "STEP_END", "SAMPLE", "CONTROL", "EventQueue"]

ARRIVAL = 0
STEP_END = 1
SAMPLE = 2
CONTROL = 3


class EventQueue:
    """A min-heap of ``(time_ns, priority, seq, payload)``; ``pop()`` returns ``(time_ns, priority, payload)``.

    >>> q = EventQueue(); q.push(3, ARRIVAL, "a"); q.peek_time()
    3
    """

    __slots__ = ("_heap", "_seq")

    def __init__(self):
        self._heap: list[tuple] = []
        self._seq = 0

    def __len__(self) -> int:
        return len(self._heap)

    def push(self, time_ns: int, priority: int, payload) -> None:
        """Schedule ``payload`` at ``time_ns`` (an int)."""
        self._seq += 1
        heapq.heappush(self._heap, (time_ns, priority, self._seq, payload))

    def pop(self) -> tuple:
        """Remove and return the earliest event as ``(time_ns, priority, payload)``."""
        time_ns, priority, _, payload = heapq.heappop(self._heap)
        return time_ns, priority, payload

    def pop_before(self, limit_ns):
        """Remove and return the earliest event as :meth:`pop` does if it comes before ``limit_ns``; else None.

        >>> q = EventQueue(); q.push(3, ARRIVAL, "a"); q.pop_before(3), q.pop_before(4)
        (None, (3, 0, 'a'))
        """
        heap = self._heap
        if not heap or heap[0][0] >= limit_ns:
            return None
        time_ns, priority, _, payload = heapq.heappop(heap)
        return time_ns, priority, payload

    def peek_time(self):
        """Time of the earliest event, or None when empty."""
        return self._heap[0][0] if self._heap else None
