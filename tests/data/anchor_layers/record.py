"""Records what tests/python/test_openvino_layers.py maps: for a built-in model
or a hook (inference, batch 2), TensorFlow's graph of the traced step, OpenVINO's
converted model, and the CPU plugin's runtime nodes with their times in each of 5
profiled calls, in each precision (the converted model tagged as
tfpgo.runtime.openvino_layers tags it).

    PYTHONPATH=python python3 tests/data/anchor_layers/record.py cnn transformer
    PYTHONPATH=python python3 tests/data/anchor_layers/record.py \
        tests/data/anchor_layers/blocks.py
"""

import dataclasses
import json
import sys
from pathlib import Path

import numpy as np
import tensorflow as tf

from tfpgo.models import load_model
from tfpgo.runtime import anchors, openvino_layers


def record(model: str) -> dict:
    case = load_model(model, "infer", 2)
    inputs = tuple(tf.nest.map_structure(np.asarray, list(case.inputs)))
    concrete, flat = anchors.traced_step(case.function, inputs)
    converted = anchors.openvino_model(concrete)
    tf_graph = openvino_layers.tf_graph_nodes(concrete)
    nodes = openvino_layers.converted_nodes(converted)
    openvino_layers.tag(converted, openvino_layers.tf_origins(tf_graph, nodes))
    runtime = {
        engine: openvino_layers.profile_engine(converted, concrete, flat, 2, precision, 5)
        for engine, precision in anchors.OPENVINO_PRECISIONS.items()
    }
    return {
        "model": model,
        "tf_graph": [dataclasses.asdict(node) for node in tf_graph],
        "converted": [dataclasses.asdict(node) for node in nodes],
        "runtime": {e: [dataclasses.asdict(n) for n in ns] for e, ns in runtime.items()},
    }


if __name__ == "__main__":
    for name in sys.argv[1:]:  # a zoo model, or a hook file
        path = Path(__file__).parent / f"{Path(name).stem}.openvino.json"
        path.write_text(json.dumps(record(name), separators=(",", ":")) + "\n")
        print(path)
