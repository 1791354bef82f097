"""`bazel run //tools:check_tf_patch -- /path/to/tensorflow`: checks that the
tfpgo patch series applies to a TensorFlow 2.21 tree and attaches the
ProfileAnnotation trait to every tf op (see tfpgo.tf_patch_check)."""

import sys

from tfpgo.tf_patch_check import entry_point

if __name__ == "__main__":
    sys.exit(entry_point())
