"""The flow's report (`report.md`, `report.html`): the run's summary and the
tables of every analysis, composed from in-memory records."""
