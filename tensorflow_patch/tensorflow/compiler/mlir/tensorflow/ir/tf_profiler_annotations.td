//===- tf_profiler_annotations.td - Profile annotations ----*- tablegen -*-===//
//
// Licensed under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// The interface through which profile-guided passes attach measured runtime
// data to TensorFlow ops, and the trait that implements it. TF_Op carries
// TF_ProfileAnnotation, so every registered tf op answers the interface; the
// passes fall back to the same attribute helpers for unregistered tf ops.
//
//===----------------------------------------------------------------------===//

#ifndef TF_PROFILER_ANNOTATIONS
#define TF_PROFILER_ANNOTATIONS

include "mlir/IR/OpBase.td"

def TF_ProfilerAnnotationsInterface
    : OpInterface<"ProfilerAnnotationsInterface"> {
  let cppNamespace = "::mlir::TF";

  let description = [{
    Reads and writes the runtime profile of an op, stored as the
    `profiler_data` dictionary attribute (see ProfilerData). Implemented by the
    `TF::ProfileAnnotation` trait; ops do not implement it by hand.
  }];

  let methods = [
    InterfaceMethod<
      /*desc=*/"Stores `data` on the op, replacing an earlier annotation.",
      /*retTy=*/"void",
      /*methodName=*/"AttachProfilerData",
      /*args=*/(ins "const ::mlir::TF::ProfilerData &":$data)
    >,
    InterfaceMethod<
      /*desc=*/[{As AttachProfilerData, building the attribute with `encoder`,
                 the pass's one encoder for all the ops it annotates.}],
      /*retTy=*/"void",
      /*methodName=*/"AttachEncodedProfilerData",
      /*args=*/(ins "const ::mlir::TF::ProfilerData &":$data,
                    "const ::mlir::TF::ProfilerDataEncoder &":$encoder)
    >,
    InterfaceMethod<
      /*desc=*/[{Returns the op's annotation, or std::nullopt if the op has
                 none or it is malformed.}],
      /*retTy=*/"std::optional<::mlir::TF::ProfilerData>",
      /*methodName=*/"GetProfilerData"
    >,
    InterfaceMethod<
      /*desc=*/"Returns true if the op carries a `profiler_data` attribute.",
      /*retTy=*/"bool",
      /*methodName=*/"HasProfilerData"
    >,
  ];
}

// Bundles the interface with the native trait that implements it, the way
// TF_UniqueResourceAllocation bundles TF_ResourceHandleAllocatorInterface.
def TF_ProfileAnnotation : TraitList<[
    TF_ProfilerAnnotationsInterface,
    NativeOpTrait<"TF::ProfileAnnotation">
]>;

#endif // TF_PROFILER_ANNOTATIONS
