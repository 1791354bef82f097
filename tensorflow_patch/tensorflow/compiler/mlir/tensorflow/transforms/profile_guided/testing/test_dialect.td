//===- test_dialect.td - TEST ONLY dialect with ProfileAnnotation -*- tablegen -*-===//
//
// Licensed under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// TEST ONLY. Upstream MLIR has no tf dialect, so tf ops parse unregistered
// and the annotate pass takes its fallback path on them. This dialect
// exercises the other path: its base op class attaches TF_ProfileAnnotation
// exactly the way TF_Op does in the TensorFlow patch series, so its ops
// implement ProfilerAnnotationsInterface through the trait. Op mnemonics
// mirror tf op names so fusion rules apply unchanged.
//
//===----------------------------------------------------------------------===//

#ifndef TF_PROFILE_GUIDED_TEST_DIALECT
#define TF_PROFILE_GUIDED_TEST_DIALECT

include "mlir/IR/OpBase.td"
include "tensorflow/compiler/mlir/tensorflow/ir/tf_profiler_annotations.td"

def TFPGOTest_Dialect : Dialect {
  let name = "tfpgo_test";
  let summary = "TEST ONLY: registered ops carrying TF_ProfileAnnotation";
  let cppNamespace = "::mlir::tfpgo_test";
}

// Mirrors `class TF_Op` with TF_ProfileAnnotation in its trait list.
class TFPGOTest_Op<string mnemonic, list<Trait> traits = []>
    : Op<TFPGOTest_Dialect, mnemonic,
         !listconcat(traits, [TF_ProfileAnnotation])>;

class TFPGOTest_GenericOp<string mnemonic> : TFPGOTest_Op<mnemonic> {
  let arguments = (ins Variadic<AnyType>:$operands);
  let results = (outs Variadic<AnyType>:$results);
}

def TFPGOTest_MatMulOp : TFPGOTest_GenericOp<"MatMul">;
def TFPGOTest_BiasAddOp : TFPGOTest_GenericOp<"BiasAdd">;
def TFPGOTest_ReluOp : TFPGOTest_GenericOp<"Relu">;

// A registered op without the trait: never annotated.
def TFPGOTest_PlainOp : Op<TFPGOTest_Dialect, "Plain"> {
  let arguments = (ins Variadic<AnyType>:$operands);
  let results = (outs Variadic<AnyType>:$results);
}

#endif // TF_PROFILE_GUIDED_TEST_DIALECT
