// erf / erfc / tanh on f64 and bf16 (GELU variants): on the CPU the C
// library's erf / erfc, on the GPU CUDA's libdevice (__nv_erf, ...).
#id = affine_map<(i) -> (i)>
func.func @erf_types(%x: tensor<64xf64>, %y: tensor<64xbf16>) -> (tensor<64xf64>, tensor<64xbf16>) {
  %e = tensor.empty() : tensor<64xf64>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<64xf64>) outs(%e : tensor<64xf64>) {
  ^bb0(%a: f64, %o: f64):
    %t = math.tanh %a : f64
    %u = math.erf %t : f64
    %v = math.erfc %u : f64
    linalg.yield %v : f64
  } -> tensor<64xf64>
  %f = tensor.empty() : tensor<64xbf16>
  %s = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%y : tensor<64xbf16>) outs(%f : tensor<64xbf16>) {
  ^bb0(%a: bf16, %o: bf16):
    %u = math.erf %a : bf16
    linalg.yield %u : bf16
  } -> tensor<64xbf16>
  return %r, %s : tensor<64xf64>, tensor<64xbf16>
}
