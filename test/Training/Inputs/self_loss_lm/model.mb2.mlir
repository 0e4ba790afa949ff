#map = affine_map<(d0, d1, d2) -> (d0, d1)>
#map1 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map2 = affine_map<(d0, d1) -> (d1)>
#map3 = affine_map<(d0, d1) -> (d0, d1)>
#map4 = affine_map<(d0, d1) -> (d0)>
#map5 = affine_map<(d0, d1) -> (d0, 0)>
#map6 = affine_map<(d0) -> (d0)>
#map7 = affine_map<(d0) -> ()>
#map8 = affine_map<() -> ()>
module {
  func.func @forward(%arg0: tensor<32x16xf32>, %arg1: tensor<16x16xf32>, %arg2: tensor<16xf32>, %arg3: tensor<2x8xi64>) -> tensor<f32> {
    %c-100_i64 = arith.constant -100 : i64
    %c0_i64 = arith.constant 0 : i64
    %c32 = arith.constant 32 : index
    %cst = arith.constant 0.000000e+00 : f32
    %cst_0 = arith.constant 0xFF800000 : f32
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<f32>
    %cst_2 = arith.constant dense<0> : tensor<i64>
    %0 = tensor.empty() : tensor<2x8x16xf32>
    %1 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg3 : tensor<2x8xi64>) outs(%0 : tensor<2x8x16xf32>) {
    ^bb0(%in: i64, %out: f32):
      %38 = arith.index_cast %in : i64 to index
      %39 = linalg.index 2 : index
      %40 = arith.cmpi slt, %38, %c32 : index
      cf.assert %40, "index must be smaller than dim size"
      %41 = arith.cmpi sge, %in, %c0_i64 : i64
      cf.assert %41, "index must be larger or equal to 0"
      %extracted = tensor.extract %arg0[%38, %39] : tensor<32x16xf32>
      linalg.yield %extracted : f32
    } -> tensor<2x8x16xf32>
    %collapsed = tensor.collapse_shape %1 [[0, 1], [2]] : tensor<2x8x16xf32> into tensor<16x16xf32>
    %2 = tensor.empty() : tensor<16x16xf32>
    %transposed = linalg.transpose ins(%arg1 : tensor<16x16xf32>) outs(%2 : tensor<16x16xf32>) permutation = [1, 0] 
    %3 = linalg.fill ins(%cst : f32) outs(%2 : tensor<16x16xf32>) -> tensor<16x16xf32>
    %4 = linalg.matmul ins(%collapsed, %transposed : tensor<16x16xf32>, tensor<16x16xf32>) outs(%3 : tensor<16x16xf32>) -> tensor<16x16xf32>
    %5 = linalg.generic {indexing_maps = [#map2, #map3], iterator_types = ["parallel", "parallel"]} ins(%arg2 : tensor<16xf32>) outs(%2 : tensor<16x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<16x16xf32>
    %6 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%4, %5 : tensor<16x16xf32>, tensor<16x16xf32>) outs(%2 : tensor<16x16xf32>) {
    ^bb0(%in: f32, %in_12: f32, %out: f32):
      %38 = arith.addf %in, %in_12 : f32
      linalg.yield %38 : f32
    } -> tensor<16x16xf32>
    %expanded = tensor.expand_shape %6 [[0, 1], [2]] output_shape [2, 8, 16] : tensor<16x16xf32> into tensor<2x8x16xf32>
    %7 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded : tensor<2x8x16xf32>) outs(%0 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %38 = math.tanh %in : f32
      linalg.yield %38 : f32
    } -> tensor<2x8x16xf32>
    %8 = tensor.empty() : tensor<16x32xf32>
    %transposed_3 = linalg.transpose ins(%arg0 : tensor<32x16xf32>) outs(%8 : tensor<16x32xf32>) permutation = [1, 0] 
    %collapsed_4 = tensor.collapse_shape %7 [[0, 1], [2]] : tensor<2x8x16xf32> into tensor<16x16xf32>
    %9 = linalg.fill ins(%cst : f32) outs(%8 : tensor<16x32xf32>) -> tensor<16x32xf32>
    %10 = linalg.matmul ins(%collapsed_4, %transposed_3 : tensor<16x16xf32>, tensor<16x32xf32>) outs(%9 : tensor<16x32xf32>) -> tensor<16x32xf32>
    %expanded_5 = tensor.expand_shape %10 [[0, 1], [2]] output_shape [2, 8, 32] : tensor<16x32xf32> into tensor<2x8x32xf32>
    %extracted_slice = tensor.extract_slice %expanded_5[0, 0, 0] [2, 7, 32] [1, 1, 1] : tensor<2x8x32xf32> to tensor<2x7x32xf32>
    %collapsed_6 = tensor.collapse_shape %extracted_slice [[0, 1], [2]] : tensor<2x7x32xf32> into tensor<14x32xf32>
    %extracted_slice_7 = tensor.extract_slice %arg3[0, 1] [2, 7] [1, 1] : tensor<2x8xi64> to tensor<2x7xi64>
    %collapsed_8 = tensor.collapse_shape %extracted_slice_7 [[0, 1]] : tensor<2x7xi64> into tensor<14xi64>
    %11 = tensor.empty() : tensor<14xi64>
    %12 = linalg.fill ins(%c0_i64 : i64) outs(%11 : tensor<14xi64>) -> tensor<14xi64>
    %13 = tensor.empty() : tensor<14xf32>
    %14 = linalg.fill ins(%cst_0 : f32) outs(%13 : tensor<14xf32>) -> tensor<14xf32>
    %15:2 = linalg.generic {indexing_maps = [#map3, #map4, #map4], iterator_types = ["parallel", "reduction"]} ins(%collapsed_6 : tensor<14x32xf32>) outs(%14, %12 : tensor<14xf32>, tensor<14xi64>) {
    ^bb0(%in: f32, %out: f32, %out_12: i64):
      %38 = linalg.index 1 : index
      %39 = arith.index_cast %38 : index to i64
      %40 = arith.maximumf %in, %out : f32
      %41 = arith.cmpf ogt, %in, %out : f32
      %42 = arith.select %41, %39, %out_12 : i64
      linalg.yield %40, %42 : f32, i64
    } -> (tensor<14xf32>, tensor<14xi64>)
    %expanded_9 = tensor.expand_shape %15#0 [[0, 1]] output_shape [14, 1] : tensor<14xf32> into tensor<14x1xf32>
    %16 = tensor.empty() : tensor<14x32xf32>
    %17 = linalg.generic {indexing_maps = [#map3, #map5, #map3], iterator_types = ["parallel", "parallel"]} ins(%collapsed_6, %expanded_9 : tensor<14x32xf32>, tensor<14x1xf32>) outs(%16 : tensor<14x32xf32>) {
    ^bb0(%in: f32, %in_12: f32, %out: f32):
      %38 = arith.subf %in, %in_12 : f32
      linalg.yield %38 : f32
    } -> tensor<14x32xf32>
    %18 = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%17 : tensor<14x32xf32>) outs(%16 : tensor<14x32xf32>) {
    ^bb0(%in: f32, %out: f32):
      %38 = math.exp %in : f32
      linalg.yield %38 : f32
    } -> tensor<14x32xf32>
    %19 = tensor.empty() : tensor<14x1xf32>
    %20 = linalg.fill ins(%cst : f32) outs(%19 : tensor<14x1xf32>) -> tensor<14x1xf32>
    %21 = linalg.generic {indexing_maps = [#map3, #map5], iterator_types = ["parallel", "reduction"]} ins(%18 : tensor<14x32xf32>) outs(%20 : tensor<14x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %38 = arith.addf %in, %out : f32
      linalg.yield %38 : f32
    } -> tensor<14x1xf32>
    %22 = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%21 : tensor<14x1xf32>) outs(%19 : tensor<14x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %38 = math.log %in : f32
      linalg.yield %38 : f32
    } -> tensor<14x1xf32>
    %23 = linalg.generic {indexing_maps = [#map3, #map5, #map3], iterator_types = ["parallel", "parallel"]} ins(%17, %22 : tensor<14x32xf32>, tensor<14x1xf32>) outs(%16 : tensor<14x32xf32>) {
    ^bb0(%in: f32, %in_12: f32, %out: f32):
      %38 = arith.subf %in, %in_12 : f32
      linalg.yield %38 : f32
    } -> tensor<14x32xf32>
    %24 = tensor.empty() : tensor<14xi1>
    %25 = linalg.generic {indexing_maps = [#map6, #map6], iterator_types = ["parallel"]} ins(%collapsed_8 : tensor<14xi64>) outs(%24 : tensor<14xi1>) {
    ^bb0(%in: i64, %out: i1):
      %38 = arith.cmpi ne, %in, %c-100_i64 : i64
      linalg.yield %38 : i1
    } -> tensor<14xi1>
    %26 = linalg.generic {indexing_maps = [#map6, #map6, #map7, #map6], iterator_types = ["parallel"]} ins(%25, %collapsed_8, %cst_2 : tensor<14xi1>, tensor<14xi64>, tensor<i64>) outs(%11 : tensor<14xi64>) {
    ^bb0(%in: i1, %in_12: i64, %in_13: i64, %out: i64):
      %38 = arith.select %in, %in_12, %in_13 : i64
      linalg.yield %38 : i64
    } -> tensor<14xi64>
    %expanded_10 = tensor.expand_shape %26 [[0, 1]] output_shape [14, 1] : tensor<14xi64> into tensor<14x1xi64>
    %27 = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%expanded_10 : tensor<14x1xi64>) outs(%20 : tensor<14x1xf32>) {
    ^bb0(%in: i64, %out: f32):
      %38 = linalg.index 0 : index
      %39 = arith.index_cast %in : i64 to index
      %40 = arith.cmpi slt, %39, %c32 : index
      cf.assert %40, "index must be smaller than dim size"
      %41 = arith.cmpi sge, %in, %c0_i64 : i64
      cf.assert %41, "index must be larger or equal to 0"
      %extracted = tensor.extract %23[%38, %39] : tensor<14x32xf32>
      linalg.yield %extracted : f32
    } -> tensor<14x1xf32>
    %collapsed_11 = tensor.collapse_shape %27 [[0, 1]] : tensor<14x1xf32> into tensor<14xf32>
    %28 = linalg.generic {indexing_maps = [#map6, #map6], iterator_types = ["parallel"]} ins(%collapsed_11 : tensor<14xf32>) outs(%13 : tensor<14xf32>) {
    ^bb0(%in: f32, %out: f32):
      %38 = arith.negf %in : f32
      linalg.yield %38 : f32
    } -> tensor<14xf32>
    %29 = linalg.generic {indexing_maps = [#map6, #map6, #map7, #map6], iterator_types = ["parallel"]} ins(%25, %28, %cst_1 : tensor<14xi1>, tensor<14xf32>, tensor<f32>) outs(%13 : tensor<14xf32>) {
    ^bb0(%in: i1, %in_12: f32, %in_13: f32, %out: f32):
      %38 = arith.select %in, %in_12, %in_13 : f32
      linalg.yield %38 : f32
    } -> tensor<14xf32>
    %30 = tensor.empty() : tensor<i64>
    %31 = linalg.fill ins(%c0_i64 : i64) outs(%30 : tensor<i64>) -> tensor<i64>
    %32 = linalg.generic {indexing_maps = [#map6, #map7], iterator_types = ["reduction"]} ins(%25 : tensor<14xi1>) outs(%31 : tensor<i64>) {
    ^bb0(%in: i1, %out: i64):
      %38 = arith.extui %in : i1 to i64
      %39 = arith.addi %38, %out : i64
      linalg.yield %39 : i64
    } -> tensor<i64>
    %33 = tensor.empty() : tensor<f32>
    %34 = linalg.generic {indexing_maps = [#map8, #map8], iterator_types = []} ins(%32 : tensor<i64>) outs(%33 : tensor<f32>) {
    ^bb0(%in: i64, %out: f32):
      %38 = arith.sitofp %in : i64 to f32
      linalg.yield %38 : f32
    } -> tensor<f32>
    %35 = linalg.fill ins(%cst : f32) outs(%33 : tensor<f32>) -> tensor<f32>
    %36 = linalg.generic {indexing_maps = [#map6, #map7], iterator_types = ["reduction"]} ins(%29 : tensor<14xf32>) outs(%35 : tensor<f32>) {
    ^bb0(%in: f32, %out: f32):
      %38 = arith.addf %in, %out : f32
      linalg.yield %38 : f32
    } -> tensor<f32>
    %37 = linalg.generic {indexing_maps = [#map8, #map8, #map8], iterator_types = []} ins(%36, %34 : tensor<f32>, tensor<f32>) outs(%33 : tensor<f32>) {
    ^bb0(%in: f32, %in_12: f32, %out: f32):
      %38 = arith.divf %in, %in_12 : f32
      linalg.yield %38 : f32
    } -> tensor<f32>
    return %37 : tensor<f32>
  }
}
