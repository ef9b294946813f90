"""The shared types every store and the decision engine speak, below all of them.

:mod:`.record`: :class:`~.record.DocRecord` (one stored decision) and :class:`~.record.Cluster`, with
how a cluster is named; :mod:`.match`: :class:`~.match.Match`, one look-up result; :mod:`.protocol`:
:class:`~.protocol.RecordStore`, what the engine reads and writes and every store implements;
:mod:`.neighbour`: :class:`~.neighbour.Neighbour`, one ``similar`` result, and the order every reader
answers in.
"""
