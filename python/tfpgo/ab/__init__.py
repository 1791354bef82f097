"""The measurement layer: how tfpgo tells whether one program or step is faster
than another, for the tuner (`tfpgo.tune`, IREE's programs) and the Proposer
(`tfpgo.proposer`, TensorFlow's steps) alike.

- `intervals`: Student's t and the interval of a ratio from a log-ratio's
  estimate;
- `trimmed`: the robust estimate of a paired log-ratio;
- `result`: the verdict and the result record of an A/B, and how both are
  written;
- `turns`: the order arms take turns in a round;
- `paired`: the paired A/B of programs run in turn in several processes, with
  its sequential decision.

Each tuner's thresholds (how small a gain is worth keeping) are its own, stated
where it uses them.
"""
