// The cumulative sum torch-mlir exports for transformers' GPT-2 position
// ids when the model is exported without an explicit attention_mask: an op
// of torch-mlir's tm_tensor dialect, which pipeopt does not load.
func.func @forward(%ids: tensor<2x8xi64>) -> tensor<2x8xi64> {
  %0 = tensor.empty() : tensor<2x8xi64>
  %1 = tensor.empty() : tensor<2xi64>
  // expected-error @+1 {{'tm_tensor.scan' is an op of dialect 'tm_tensor' (torch-mlir's TMTensor dialect), which pipeopt does not load: pipeopt takes func with tosa or linalg on tensors (and tensor, arith, math, scf, ml_program; the pipe dialect for its own stages); PyTorch models exported by torch-mlir carry tm_tensor ops where torch has no linalg form, e.g. tm_tensor.scan for the cumulative sum transformers' GPT-2 computes its position ids with when it is exported without an explicit attention_mask: pass an explicit attention_mask (and position_ids) to the model you export, or lower the op to linalg on tensors before pipeopt}}
  %2:2 = tm_tensor.scan dimension(1) inclusive(true) ins(%ids : tensor<2x8xi64>) outs(%0, %1 : tensor<2x8xi64>, tensor<2xi64>) {
  ^bb0(%a: i64, %b: i64):
    %s = arith.addi %a, %b : i64
    tm_tensor.yield %s : i64
  } -> tensor<2x8xi64>, tensor<2xi64>
  return %2#0 : tensor<2x8xi64>
}
