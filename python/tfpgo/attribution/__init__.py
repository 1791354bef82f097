"""Where measured time goes, and the law it obeys. From the event table
(`tfpgo.trace`): the per-op profile (`op_profile.json`), device kernels and
copies by op (`device_attribution`, CUDA-graph command buffers in
`command_buffer`), XLA's HLO instructions by tf op (`xla_attribution`,
`hlo_profile.json`). Every profiled picosecond is charged once at each level
(`parts`: the splitting rules), and the conservation checker (`conservation`)
verifies every output of a run against that law."""
