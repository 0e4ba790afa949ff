#map = affine_map<(d0, d1, d2) -> (d0, d1)>
#map1 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map2 = affine_map<(d0) -> (d0)>
#map3 = affine_map<(d0, d1, d2) -> (0, d1, d2)>
#map4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, 0, d3)>
#map5 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
#map6 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map7 = affine_map<(d0, d1, d2, d3) -> ()>
#map8 = affine_map<(d0, d1, d2, d3) -> (d0, 0, 0, 0)>
#map9 = affine_map<(d0, d1, d2, d3) -> (0, 0, 0, d3)>
#map10 = affine_map<(d0, d1, d2, d3) -> (0, d1, d2, d3)>
#map11 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
#map12 = affine_map<(d0, d1, d2) -> (d2)>
#map13 = affine_map<(d0, d1) -> (d1)>
#map14 = affine_map<(d0, d1) -> (d0, d1)>
#map15 = affine_map<(d0, d1, d2, d3) -> (d0, 0, d2, d3)>
#map16 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#map17 = affine_map<(d0, d1) -> (d0)>
#map18 = affine_map<(d0, d1) -> (d0, 0)>
#map19 = affine_map<(d0) -> ()>
#map20 = affine_map<() -> ()>
module {
  func.func @forward(%arg0: tensor<32x16xf32>, %arg1: tensor<8x16xf32>, %arg2: tensor<16xf32>, %arg3: tensor<16xf32>, %arg4: tensor<16x48xf32>, %arg5: tensor<48xf32>, %arg6: tensor<16x16xf32>, %arg7: tensor<16xf32>, %arg8: tensor<16xf32>, %arg9: tensor<16xf32>, %arg10: tensor<16x64xf32>, %arg11: tensor<64xf32>, %arg12: tensor<64x16xf32>, %arg13: tensor<16xf32>, %arg14: tensor<16xf32>, %arg15: tensor<16xf32>, %arg16: tensor<2x8xi64>) -> tensor<f32> {
    %c-100_i64 = arith.constant -100 : i64
    %c3_i64 = arith.constant 3 : i64
    %c0_i64 = arith.constant 0 : i64
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    %cst = arith.constant 0.000000e+00 : f64
    %cst_0 = arith.constant 0.000000e+00 : f32
    %cst_1 = arith.constant 0xFF800000 : f32
    %cst_2 = arith.constant dense<-3.40282347E+38> : tensor<f32>
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<f32>
    %cst_4 = arith.constant dense<true> : tensor<i1>
    %cst_5 = arith.constant 0.79788456080286541 : f64
    %cst_6 = arith.constant 4.471500e-02 : f64
    %cst_7 = arith.constant 0.35355339059327379 : f64
    %cst_8 = arith.constant 1.000000e-05 : f64
    %true = arith.constant true
    %cst_9 = arith.constant 1.600000e+01 : f64
    %cst_10 = arith.constant 1.600000e+01 : f32
    %cst_11 = arith.constant 5.000000e-01 : f32
    %cst_12 = arith.constant 1.000000e+00 : f32
    %cst_13 = arith.constant dense<0> : tensor<i64>
    %0 = tensor.empty() : tensor<2x8x16xf32>
    %1 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg16 : tensor<2x8xi64>) outs(%0 : tensor<2x8x16xf32>) {
    ^bb0(%in: i64, %out: f32):
      %148 = arith.index_cast %in : i64 to index
      %149 = linalg.index 2 : index
      %150 = arith.cmpi slt, %148, %c32 : index
      cf.assert %150, "index must be smaller than dim size"
      %151 = arith.cmpi sge, %in, %c0_i64 : i64
      cf.assert %151, "index must be larger or equal to 0"
      %extracted = tensor.extract %arg0[%148, %149] : tensor<32x16xf32>
      linalg.yield %extracted : f32
    } -> tensor<2x8x16xf32>
    %2 = tensor.empty() : tensor<8xi64>
    %3 = linalg.generic {indexing_maps = [#map2], iterator_types = ["parallel"]} outs(%2 : tensor<8xi64>) {
    ^bb0(%out: i64):
      %148 = linalg.index 0 : index
      %149 = arith.index_cast %148 : index to i64
      linalg.yield %149 : i64
    } -> tensor<8xi64>
    %expanded = tensor.expand_shape %3 [[0, 1]] output_shape [1, 8] : tensor<8xi64> into tensor<1x8xi64>
    %4 = tensor.empty() : tensor<1x8x16xf32>
    %5 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded : tensor<1x8xi64>) outs(%4 : tensor<1x8x16xf32>) {
    ^bb0(%in: i64, %out: f32):
      %148 = arith.index_cast %in : i64 to index
      %149 = linalg.index 2 : index
      %150 = arith.cmpi slt, %148, %c8 : index
      cf.assert %150, "index must be smaller than dim size"
      %151 = arith.cmpi sge, %in, %c0_i64 : i64
      cf.assert %151, "index must be larger or equal to 0"
      %extracted = tensor.extract %arg1[%148, %149] : tensor<8x16xf32>
      linalg.yield %extracted : f32
    } -> tensor<1x8x16xf32>
    %6 = linalg.generic {indexing_maps = [#map1, #map3, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%1, %5 : tensor<2x8x16xf32>, tensor<1x8x16xf32>) outs(%0 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_46: f32, %out: f32):
      %148 = arith.addf %in, %in_46 : f32
      linalg.yield %148 : f32
    } -> tensor<2x8x16xf32>
    %7 = tensor.empty() : tensor<2xi64>
    %8 = linalg.generic {indexing_maps = [#map2], iterator_types = ["parallel"]} outs(%7 : tensor<2xi64>) {
    ^bb0(%out: i64):
      %148 = linalg.index 0 : index
      %149 = arith.index_cast %148 : index to i64
      linalg.yield %149 : i64
    } -> tensor<2xi64>
    %expanded_14 = tensor.expand_shape %8 [[0, 1, 2, 3]] output_shape [2, 1, 1, 1] : tensor<2xi64> into tensor<2x1x1x1xi64>
    %expanded_15 = tensor.expand_shape %3 [[0, 1, 2, 3]] output_shape [1, 1, 8, 1] : tensor<8xi64> into tensor<1x1x8x1xi64>
    %expanded_16 = tensor.expand_shape %3 [[0, 1, 2, 3]] output_shape [1, 1, 1, 8] : tensor<8xi64> into tensor<1x1x1x8xi64>
    %9 = tensor.empty() : tensor<1x1x8x8xi1>
    %10 = linalg.generic {indexing_maps = [#map4, #map5, #map6], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded_16, %expanded_15 : tensor<1x1x1x8xi64>, tensor<1x1x8x1xi64>) outs(%9 : tensor<1x1x8x8xi1>) {
    ^bb0(%in: i64, %in_46: i64, %out: i1):
      %148 = arith.cmpi sle, %in, %in_46 : i64
      linalg.yield %148 : i1
    } -> tensor<1x1x8x8xi1>
    %11 = linalg.generic {indexing_maps = [#map7, #map6, #map6], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%cst_4, %10 : tensor<i1>, tensor<1x1x8x8xi1>) outs(%9 : tensor<1x1x8x8xi1>) {
    ^bb0(%in: i1, %in_46: i1, %out: i1):
      %148 = arith.andi %in, %in_46 : i1
      linalg.yield %148 : i1
    } -> tensor<1x1x8x8xi1>
    %12 = tensor.empty() : tensor<2x1x1x8xi1>
    %13 = linalg.generic {indexing_maps = [#map8, #map9, #map6], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded_14, %expanded_16 : tensor<2x1x1x1xi64>, tensor<1x1x1x8xi64>) outs(%12 : tensor<2x1x1x8xi1>) {
    ^bb0(%in: i64, %in_46: i64, %out: i1):
      linalg.yield %true : i1
    } -> tensor<2x1x1x8xi1>
    %14 = tensor.empty() : tensor<2x1x8x8xi1>
    %15 = linalg.generic {indexing_maps = [#map10, #map4, #map6], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%11, %13 : tensor<1x1x8x8xi1>, tensor<2x1x1x8xi1>) outs(%14 : tensor<2x1x8x8xi1>) {
    ^bb0(%in: i1, %in_46: i1, %out: i1):
      %148 = arith.andi %in, %in_46 : i1
      linalg.yield %148 : i1
    } -> tensor<2x1x8x8xi1>
    %16 = tensor.empty() : tensor<2x1x8x8xf32>
    %17 = linalg.generic {indexing_maps = [#map6, #map7, #map7, #map6], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%15, %cst_3, %cst_2 : tensor<2x1x8x8xi1>, tensor<f32>, tensor<f32>) outs(%16 : tensor<2x1x8x8xf32>) {
    ^bb0(%in: i1, %in_46: f32, %in_47: f32, %out: f32):
      %148 = arith.select %in, %in_46, %in_47 : f32
      linalg.yield %148 : f32
    } -> tensor<2x1x8x8xf32>
    %18 = tensor.empty() : tensor<2x8x16xf64>
    %19 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%6 : tensor<2x8x16xf32>) outs(%18 : tensor<2x8x16xf64>) {
    ^bb0(%in: f32, %out: f64):
      %148 = arith.extf %in : f32 to f64
      linalg.yield %148 : f64
    } -> tensor<2x8x16xf64>
    %20 = tensor.empty() : tensor<2x8x1xf64>
    %21 = linalg.fill ins(%cst : f64) outs(%20 : tensor<2x8x1xf64>) -> tensor<2x8x1xf64>
    %22 = linalg.generic {indexing_maps = [#map1, #map11], iterator_types = ["parallel", "parallel", "reduction"]} ins(%19 : tensor<2x8x16xf64>) outs(%21 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %148 = arith.addf %in, %out : f64
      linalg.yield %148 : f64
    } -> tensor<2x8x1xf64>
    %23 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%22 : tensor<2x8x1xf64>) outs(%20 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %148 = arith.divf %in, %cst_9 : f64
      linalg.yield %148 : f64
    } -> tensor<2x8x1xf64>
    %24 = linalg.generic {indexing_maps = [#map1, #map11, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%19, %23 : tensor<2x8x16xf64>, tensor<2x8x1xf64>) outs(%18 : tensor<2x8x16xf64>) {
    ^bb0(%in: f64, %in_46: f64, %out: f64):
      %148 = arith.subf %in, %in_46 : f64
      linalg.yield %148 : f64
    } -> tensor<2x8x16xf64>
    %25 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%24, %24 : tensor<2x8x16xf64>, tensor<2x8x16xf64>) outs(%18 : tensor<2x8x16xf64>) {
    ^bb0(%in: f64, %in_46: f64, %out: f64):
      %148 = arith.mulf %in, %in_46 : f64
      linalg.yield %148 : f64
    } -> tensor<2x8x16xf64>
    %26 = linalg.generic {indexing_maps = [#map1, #map11], iterator_types = ["parallel", "parallel", "reduction"]} ins(%25 : tensor<2x8x16xf64>) outs(%21 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %148 = arith.addf %in, %out : f64
      linalg.yield %148 : f64
    } -> tensor<2x8x1xf64>
    %27 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%26 : tensor<2x8x1xf64>) outs(%20 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %148 = arith.divf %in, %cst_9 : f64
      linalg.yield %148 : f64
    } -> tensor<2x8x1xf64>
    %28 = tensor.empty() : tensor<2x8x1xf32>
    %29 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%27 : tensor<2x8x1xf64>) outs(%28 : tensor<2x8x1xf32>) {
    ^bb0(%in: f64, %out: f32):
      %148 = arith.truncf %in : f64 to f32
      linalg.yield %148 : f32
    } -> tensor<2x8x1xf32>
    %30 = linalg.fill ins(%cst_0 : f32) outs(%28 : tensor<2x8x1xf32>) -> tensor<2x8x1xf32>
    %31 = linalg.generic {indexing_maps = [#map1, #map11], iterator_types = ["parallel", "parallel", "reduction"]} ins(%6 : tensor<2x8x16xf32>) outs(%30 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %148 = arith.addf %in, %out : f32
      linalg.yield %148 : f32
    } -> tensor<2x8x1xf32>
    %32 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%31 : tensor<2x8x1xf32>) outs(%28 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %148 = arith.divf %in, %cst_10 : f32
      linalg.yield %148 : f32
    } -> tensor<2x8x1xf32>
    %33 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%29 : tensor<2x8x1xf32>) outs(%28 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %148 = arith.truncf %cst_8 : f64 to f32
      %149 = arith.addf %in, %148 : f32
      linalg.yield %149 : f32
    } -> tensor<2x8x1xf32>
    %34 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%33 : tensor<2x8x1xf32>) outs(%28 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %148 = math.rsqrt %in : f32
      linalg.yield %148 : f32
    } -> tensor<2x8x1xf32>
    %35 = linalg.generic {indexing_maps = [#map1, #map11, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%6, %32 : tensor<2x8x16xf32>, tensor<2x8x1xf32>) outs(%0 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_46: f32, %out: f32):
      %148 = arith.subf %in, %in_46 : f32
      linalg.yield %148 : f32
    } -> tensor<2x8x16xf32>
    %36 = linalg.generic {indexing_maps = [#map1, #map11, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%35, %34 : tensor<2x8x16xf32>, tensor<2x8x1xf32>) outs(%0 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_46: f32, %out: f32):
      %148 = arith.mulf %in, %in_46 : f32
      linalg.yield %148 : f32
    } -> tensor<2x8x16xf32>
    %37 = linalg.generic {indexing_maps = [#map1, #map12, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%36, %arg2 : tensor<2x8x16xf32>, tensor<16xf32>) outs(%0 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_46: f32, %out: f32):
      %148 = arith.mulf %in, %in_46 : f32
      linalg.yield %148 : f32
    } -> tensor<2x8x16xf32>
    %38 = linalg.generic {indexing_maps = [#map1, #map12, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%37, %arg3 : tensor<2x8x16xf32>, tensor<16xf32>) outs(%0 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_46: f32, %out: f32):
      %148 = arith.addf %in, %in_46 : f32
      linalg.yield %148 : f32
    } -> tensor<2x8x16xf32>
    %collapsed = tensor.collapse_shape %38 [[0, 1], [2]] : tensor<2x8x16xf32> into tensor<16x16xf32>
    %39 = tensor.empty() : tensor<16x48xf32>
    %40 = linalg.fill ins(%cst_0 : f32) outs(%39 : tensor<16x48xf32>) -> tensor<16x48xf32>
    %41 = linalg.matmul ins(%collapsed, %arg4 : tensor<16x16xf32>, tensor<16x48xf32>) outs(%40 : tensor<16x48xf32>) -> tensor<16x48xf32>
    %42 = linalg.generic {indexing_maps = [#map13, #map14], iterator_types = ["parallel", "parallel"]} ins(%arg5 : tensor<48xf32>) outs(%39 : tensor<16x48xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<16x48xf32>
    %43 = linalg.generic {indexing_maps = [#map14, #map14, #map14], iterator_types = ["parallel", "parallel"]} ins(%41, %42 : tensor<16x48xf32>, tensor<16x48xf32>) outs(%39 : tensor<16x48xf32>) {
    ^bb0(%in: f32, %in_46: f32, %out: f32):
      %148 = arith.addf %in, %in_46 : f32
      linalg.yield %148 : f32
    } -> tensor<16x48xf32>
    %expanded_17 = tensor.expand_shape %43 [[0, 1], [2]] output_shape [2, 8, 48] : tensor<16x48xf32> into tensor<2x8x48xf32>
    %extracted_slice = tensor.extract_slice %expanded_17[0, 0, 0] [2, 8, 16] [1, 1, 1] : tensor<2x8x48xf32> to tensor<2x8x16xf32>
    %extracted_slice_18 = tensor.extract_slice %expanded_17[0, 0, 16] [2, 8, 16] [1, 1, 1] : tensor<2x8x48xf32> to tensor<2x8x16xf32>
    %extracted_slice_19 = tensor.extract_slice %expanded_17[0, 0, 32] [2, 8, 16] [1, 1, 1] : tensor<2x8x48xf32> to tensor<2x8x16xf32>
    %expanded_20 = tensor.expand_shape %extracted_slice_18 [[0], [1], [2, 3]] output_shape [2, 8, 2, 8] : tensor<2x8x16xf32> into tensor<2x8x2x8xf32>
    %expanded_21 = tensor.expand_shape %extracted_slice_19 [[0], [1], [2, 3]] output_shape [2, 8, 2, 8] : tensor<2x8x16xf32> into tensor<2x8x2x8xf32>
    %44 = tensor.empty() : tensor<2x2x8x8xf32>
    %transposed = linalg.transpose ins(%expanded_21 : tensor<2x8x2x8xf32>) outs(%44 : tensor<2x2x8x8xf32>) permutation = [0, 2, 1, 3] 
    %expanded_22 = tensor.expand_shape %extracted_slice [[0], [1], [2, 3]] output_shape [2, 8, 2, 8] : tensor<2x8x16xf32> into tensor<2x8x2x8xf32>
    %transposed_23 = linalg.transpose ins(%expanded_22 : tensor<2x8x2x8xf32>) outs(%44 : tensor<2x2x8x8xf32>) permutation = [0, 2, 1, 3] 
    %transposed_24 = linalg.transpose ins(%expanded_20 : tensor<2x8x2x8xf32>) outs(%44 : tensor<2x2x8x8xf32>) permutation = [0, 2, 3, 1] 
    %collapsed_25 = tensor.collapse_shape %transposed_23 [[0, 1], [2], [3]] : tensor<2x2x8x8xf32> into tensor<4x8x8xf32>
    %collapsed_26 = tensor.collapse_shape %transposed_24 [[0, 1], [2], [3]] : tensor<2x2x8x8xf32> into tensor<4x8x8xf32>
    %45 = tensor.empty() : tensor<4x8x8xf32>
    %46 = linalg.fill ins(%cst_0 : f32) outs(%45 : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
    %47 = linalg.batch_matmul ins(%collapsed_25, %collapsed_26 : tensor<4x8x8xf32>, tensor<4x8x8xf32>) outs(%46 : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
    %expanded_27 = tensor.expand_shape %47 [[0, 1], [2], [3]] output_shape [2, 2, 8, 8] : tensor<4x8x8xf32> into tensor<2x2x8x8xf32>
    %48 = linalg.generic {indexing_maps = [#map6, #map6], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded_27 : tensor<2x2x8x8xf32>) outs(%44 : tensor<2x2x8x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %148 = arith.truncf %cst_7 : f64 to f32
      %149 = arith.mulf %in, %148 : f32
      linalg.yield %149 : f32
    } -> tensor<2x2x8x8xf32>
    %49 = linalg.generic {indexing_maps = [#map6, #map15, #map6], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%48, %17 : tensor<2x2x8x8xf32>, tensor<2x1x8x8xf32>) outs(%44 : tensor<2x2x8x8xf32>) {
    ^bb0(%in: f32, %in_46: f32, %out: f32):
      %148 = arith.addf %in, %in_46 : f32
      linalg.yield %148 : f32
    } -> tensor<2x2x8x8xf32>
    %50 = tensor.empty() : tensor<2x2x8xi64>
    %51 = linalg.fill ins(%c0_i64 : i64) outs(%50 : tensor<2x2x8xi64>) -> tensor<2x2x8xi64>
    %52 = tensor.empty() : tensor<2x2x8xf32>
    %53 = linalg.fill ins(%cst_1 : f32) outs(%52 : tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
    %54:2 = linalg.generic {indexing_maps = [#map6, #map16, #map16], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%49 : tensor<2x2x8x8xf32>) outs(%53, %51 : tensor<2x2x8xf32>, tensor<2x2x8xi64>) {
    ^bb0(%in: f32, %out: f32, %out_46: i64):
      %148 = linalg.index 3 : index
      %149 = arith.index_cast %148 : index to i64
      %150 = arith.maximumf %in, %out : f32
      %151 = arith.cmpf ogt, %in, %out : f32
      %152 = arith.select %151, %149, %out_46 : i64
      linalg.yield %150, %152 : f32, i64
    } -> (tensor<2x2x8xf32>, tensor<2x2x8xi64>)
    %expanded_28 = tensor.expand_shape %54#0 [[0], [1], [2, 3]] output_shape [2, 2, 8, 1] : tensor<2x2x8xf32> into tensor<2x2x8x1xf32>
    %55 = linalg.generic {indexing_maps = [#map6, #map5, #map6], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%49, %expanded_28 : tensor<2x2x8x8xf32>, tensor<2x2x8x1xf32>) outs(%44 : tensor<2x2x8x8xf32>) {
    ^bb0(%in: f32, %in_46: f32, %out: f32):
      %148 = arith.subf %in, %in_46 : f32
      linalg.yield %148 : f32
    } -> tensor<2x2x8x8xf32>
    %56 = linalg.generic {indexing_maps = [#map6, #map6], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%55 : tensor<2x2x8x8xf32>) outs(%44 : tensor<2x2x8x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %148 = math.exp %in : f32
      linalg.yield %148 : f32
    } -> tensor<2x2x8x8xf32>
    %57 = tensor.empty() : tensor<2x2x8x1xf32>
    %58 = linalg.fill ins(%cst_0 : f32) outs(%57 : tensor<2x2x8x1xf32>) -> tensor<2x2x8x1xf32>
    %59 = linalg.generic {indexing_maps = [#map6, #map5], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%56 : tensor<2x2x8x8xf32>) outs(%58 : tensor<2x2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %148 = arith.addf %in, %out : f32
      linalg.yield %148 : f32
    } -> tensor<2x2x8x1xf32>
    %60 = linalg.generic {indexing_maps = [#map6, #map5, #map6], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%56, %59 : tensor<2x2x8x8xf32>, tensor<2x2x8x1xf32>) outs(%44 : tensor<2x2x8x8xf32>) {
    ^bb0(%in: f32, %in_46: f32, %out: f32):
      %148 = arith.divf %in, %in_46 : f32
      linalg.yield %148 : f32
    } -> tensor<2x2x8x8xf32>
    %collapsed_29 = tensor.collapse_shape %60 [[0, 1], [2], [3]] : tensor<2x2x8x8xf32> into tensor<4x8x8xf32>
    %collapsed_30 = tensor.collapse_shape %transposed [[0, 1], [2], [3]] : tensor<2x2x8x8xf32> into tensor<4x8x8xf32>
    %61 = linalg.batch_matmul ins(%collapsed_29, %collapsed_30 : tensor<4x8x8xf32>, tensor<4x8x8xf32>) outs(%46 : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
    %expanded_31 = tensor.expand_shape %61 [[0, 1], [2], [3]] output_shape [2, 2, 8, 8] : tensor<4x8x8xf32> into tensor<2x2x8x8xf32>
    %62 = tensor.empty() : tensor<2x8x2x8xf32>
    %transposed_32 = linalg.transpose ins(%expanded_31 : tensor<2x2x8x8xf32>) outs(%62 : tensor<2x8x2x8xf32>) permutation = [0, 2, 1, 3] 
    %collapsed_33 = tensor.collapse_shape %transposed_32 [[0, 1], [2, 3]] : tensor<2x8x2x8xf32> into tensor<16x16xf32>
    %63 = tensor.empty() : tensor<16x16xf32>
    %64 = linalg.fill ins(%cst_0 : f32) outs(%63 : tensor<16x16xf32>) -> tensor<16x16xf32>
    %65 = linalg.matmul ins(%collapsed_33, %arg6 : tensor<16x16xf32>, tensor<16x16xf32>) outs(%64 : tensor<16x16xf32>) -> tensor<16x16xf32>
    %66 = linalg.generic {indexing_maps = [#map13, #map14], iterator_types = ["parallel", "parallel"]} ins(%arg7 : tensor<16xf32>) outs(%63 : tensor<16x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<16x16xf32>
    %67 = linalg.generic {indexing_maps = [#map14, #map14, #map14], iterator_types = ["parallel", "parallel"]} ins(%65, %66 : tensor<16x16xf32>, tensor<16x16xf32>) outs(%63 : tensor<16x16xf32>) {
    ^bb0(%in: f32, %in_46: f32, %out: f32):
      %148 = arith.addf %in, %in_46 : f32
      linalg.yield %148 : f32
    } -> tensor<16x16xf32>
    %expanded_34 = tensor.expand_shape %67 [[0, 1], [2]] output_shape [2, 8, 16] : tensor<16x16xf32> into tensor<2x8x16xf32>
    %68 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded_34, %6 : tensor<2x8x16xf32>, tensor<2x8x16xf32>) outs(%0 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_46: f32, %out: f32):
      %148 = arith.addf %in, %in_46 : f32
      linalg.yield %148 : f32
    } -> tensor<2x8x16xf32>
    %69 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%68 : tensor<2x8x16xf32>) outs(%18 : tensor<2x8x16xf64>) {
    ^bb0(%in: f32, %out: f64):
      %148 = arith.extf %in : f32 to f64
      linalg.yield %148 : f64
    } -> tensor<2x8x16xf64>
    %70 = linalg.generic {indexing_maps = [#map1, #map11], iterator_types = ["parallel", "parallel", "reduction"]} ins(%69 : tensor<2x8x16xf64>) outs(%21 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %148 = arith.addf %in, %out : f64
      linalg.yield %148 : f64
    } -> tensor<2x8x1xf64>
    %71 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%70 : tensor<2x8x1xf64>) outs(%20 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %148 = arith.divf %in, %cst_9 : f64
      linalg.yield %148 : f64
    } -> tensor<2x8x1xf64>
    %72 = linalg.generic {indexing_maps = [#map1, #map11, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%69, %71 : tensor<2x8x16xf64>, tensor<2x8x1xf64>) outs(%18 : tensor<2x8x16xf64>) {
    ^bb0(%in: f64, %in_46: f64, %out: f64):
      %148 = arith.subf %in, %in_46 : f64
      linalg.yield %148 : f64
    } -> tensor<2x8x16xf64>
    %73 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%72, %72 : tensor<2x8x16xf64>, tensor<2x8x16xf64>) outs(%18 : tensor<2x8x16xf64>) {
    ^bb0(%in: f64, %in_46: f64, %out: f64):
      %148 = arith.mulf %in, %in_46 : f64
      linalg.yield %148 : f64
    } -> tensor<2x8x16xf64>
    %74 = linalg.generic {indexing_maps = [#map1, #map11], iterator_types = ["parallel", "parallel", "reduction"]} ins(%73 : tensor<2x8x16xf64>) outs(%21 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %148 = arith.addf %in, %out : f64
      linalg.yield %148 : f64
    } -> tensor<2x8x1xf64>
    %75 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%74 : tensor<2x8x1xf64>) outs(%20 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %148 = arith.divf %in, %cst_9 : f64
      linalg.yield %148 : f64
    } -> tensor<2x8x1xf64>
    %76 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%75 : tensor<2x8x1xf64>) outs(%28 : tensor<2x8x1xf32>) {
    ^bb0(%in: f64, %out: f32):
      %148 = arith.truncf %in : f64 to f32
      linalg.yield %148 : f32
    } -> tensor<2x8x1xf32>
    %77 = linalg.generic {indexing_maps = [#map1, #map11], iterator_types = ["parallel", "parallel", "reduction"]} ins(%68 : tensor<2x8x16xf32>) outs(%30 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %148 = arith.addf %in, %out : f32
      linalg.yield %148 : f32
    } -> tensor<2x8x1xf32>
    %78 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%77 : tensor<2x8x1xf32>) outs(%28 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %148 = arith.divf %in, %cst_10 : f32
      linalg.yield %148 : f32
    } -> tensor<2x8x1xf32>
    %79 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%76 : tensor<2x8x1xf32>) outs(%28 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %148 = arith.truncf %cst_8 : f64 to f32
      %149 = arith.addf %in, %148 : f32
      linalg.yield %149 : f32
    } -> tensor<2x8x1xf32>
    %80 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%79 : tensor<2x8x1xf32>) outs(%28 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %148 = math.rsqrt %in : f32
      linalg.yield %148 : f32
    } -> tensor<2x8x1xf32>
    %81 = linalg.generic {indexing_maps = [#map1, #map11, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%68, %78 : tensor<2x8x16xf32>, tensor<2x8x1xf32>) outs(%0 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_46: f32, %out: f32):
      %148 = arith.subf %in, %in_46 : f32
      linalg.yield %148 : f32
    } -> tensor<2x8x16xf32>
    %82 = linalg.generic {indexing_maps = [#map1, #map11, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%81, %80 : tensor<2x8x16xf32>, tensor<2x8x1xf32>) outs(%0 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_46: f32, %out: f32):
      %148 = arith.mulf %in, %in_46 : f32
      linalg.yield %148 : f32
    } -> tensor<2x8x16xf32>
    %83 = linalg.generic {indexing_maps = [#map1, #map12, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%82, %arg8 : tensor<2x8x16xf32>, tensor<16xf32>) outs(%0 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_46: f32, %out: f32):
      %148 = arith.mulf %in, %in_46 : f32
      linalg.yield %148 : f32
    } -> tensor<2x8x16xf32>
    %84 = linalg.generic {indexing_maps = [#map1, #map12, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%83, %arg9 : tensor<2x8x16xf32>, tensor<16xf32>) outs(%0 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_46: f32, %out: f32):
      %148 = arith.addf %in, %in_46 : f32
      linalg.yield %148 : f32
    } -> tensor<2x8x16xf32>
    %collapsed_35 = tensor.collapse_shape %84 [[0, 1], [2]] : tensor<2x8x16xf32> into tensor<16x16xf32>
    %85 = tensor.empty() : tensor<16x64xf32>
    %86 = linalg.fill ins(%cst_0 : f32) outs(%85 : tensor<16x64xf32>) -> tensor<16x64xf32>
    %87 = linalg.matmul ins(%collapsed_35, %arg10 : tensor<16x16xf32>, tensor<16x64xf32>) outs(%86 : tensor<16x64xf32>) -> tensor<16x64xf32>
    %88 = linalg.generic {indexing_maps = [#map13, #map14], iterator_types = ["parallel", "parallel"]} ins(%arg11 : tensor<64xf32>) outs(%85 : tensor<16x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<16x64xf32>
    %89 = linalg.generic {indexing_maps = [#map14, #map14, #map14], iterator_types = ["parallel", "parallel"]} ins(%87, %88 : tensor<16x64xf32>, tensor<16x64xf32>) outs(%85 : tensor<16x64xf32>) {
    ^bb0(%in: f32, %in_46: f32, %out: f32):
      %148 = arith.addf %in, %in_46 : f32
      linalg.yield %148 : f32
    } -> tensor<16x64xf32>
    %expanded_36 = tensor.expand_shape %89 [[0, 1], [2]] output_shape [2, 8, 64] : tensor<16x64xf32> into tensor<2x8x64xf32>
    %90 = tensor.empty() : tensor<2x8x64xf32>
    %91 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded_36 : tensor<2x8x64xf32>) outs(%90 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %148 = arith.mulf %in, %cst_11 : f32
      linalg.yield %148 : f32
    } -> tensor<2x8x64xf32>
    %92 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded_36 : tensor<2x8x64xf32>) outs(%90 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %148 = math.fpowi %in, %c3_i64 : f32, i64
      linalg.yield %148 : f32
    } -> tensor<2x8x64xf32>
    %93 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%92 : tensor<2x8x64xf32>) outs(%90 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %148 = arith.truncf %cst_6 : f64 to f32
      %149 = arith.mulf %in, %148 : f32
      linalg.yield %149 : f32
    } -> tensor<2x8x64xf32>
    %94 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded_36, %93 : tensor<2x8x64xf32>, tensor<2x8x64xf32>) outs(%90 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32, %in_46: f32, %out: f32):
      %148 = arith.addf %in, %in_46 : f32
      linalg.yield %148 : f32
    } -> tensor<2x8x64xf32>
    %95 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%94 : tensor<2x8x64xf32>) outs(%90 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %148 = arith.truncf %cst_5 : f64 to f32
      %149 = arith.mulf %in, %148 : f32
      linalg.yield %149 : f32
    } -> tensor<2x8x64xf32>
    %96 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%95 : tensor<2x8x64xf32>) outs(%90 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %148 = math.tanh %in : f32
      linalg.yield %148 : f32
    } -> tensor<2x8x64xf32>
    %97 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%96 : tensor<2x8x64xf32>) outs(%90 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %148 = arith.addf %in, %cst_12 : f32
      linalg.yield %148 : f32
    } -> tensor<2x8x64xf32>
    %98 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%91, %97 : tensor<2x8x64xf32>, tensor<2x8x64xf32>) outs(%90 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32, %in_46: f32, %out: f32):
      %148 = arith.mulf %in, %in_46 : f32
      linalg.yield %148 : f32
    } -> tensor<2x8x64xf32>
    %collapsed_37 = tensor.collapse_shape %98 [[0, 1], [2]] : tensor<2x8x64xf32> into tensor<16x64xf32>
    %99 = linalg.matmul ins(%collapsed_37, %arg12 : tensor<16x64xf32>, tensor<64x16xf32>) outs(%64 : tensor<16x16xf32>) -> tensor<16x16xf32>
    %100 = linalg.generic {indexing_maps = [#map13, #map14], iterator_types = ["parallel", "parallel"]} ins(%arg13 : tensor<16xf32>) outs(%63 : tensor<16x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<16x16xf32>
    %101 = linalg.generic {indexing_maps = [#map14, #map14, #map14], iterator_types = ["parallel", "parallel"]} ins(%99, %100 : tensor<16x16xf32>, tensor<16x16xf32>) outs(%63 : tensor<16x16xf32>) {
    ^bb0(%in: f32, %in_46: f32, %out: f32):
      %148 = arith.addf %in, %in_46 : f32
      linalg.yield %148 : f32
    } -> tensor<16x16xf32>
    %expanded_38 = tensor.expand_shape %101 [[0, 1], [2]] output_shape [2, 8, 16] : tensor<16x16xf32> into tensor<2x8x16xf32>
    %102 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%68, %expanded_38 : tensor<2x8x16xf32>, tensor<2x8x16xf32>) outs(%0 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_46: f32, %out: f32):
      %148 = arith.addf %in, %in_46 : f32
      linalg.yield %148 : f32
    } -> tensor<2x8x16xf32>
    %103 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%102 : tensor<2x8x16xf32>) outs(%18 : tensor<2x8x16xf64>) {
    ^bb0(%in: f32, %out: f64):
      %148 = arith.extf %in : f32 to f64
      linalg.yield %148 : f64
    } -> tensor<2x8x16xf64>
    %104 = linalg.generic {indexing_maps = [#map1, #map11], iterator_types = ["parallel", "parallel", "reduction"]} ins(%103 : tensor<2x8x16xf64>) outs(%21 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %148 = arith.addf %in, %out : f64
      linalg.yield %148 : f64
    } -> tensor<2x8x1xf64>
    %105 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%104 : tensor<2x8x1xf64>) outs(%20 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %148 = arith.divf %in, %cst_9 : f64
      linalg.yield %148 : f64
    } -> tensor<2x8x1xf64>
    %106 = linalg.generic {indexing_maps = [#map1, #map11, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%103, %105 : tensor<2x8x16xf64>, tensor<2x8x1xf64>) outs(%18 : tensor<2x8x16xf64>) {
    ^bb0(%in: f64, %in_46: f64, %out: f64):
      %148 = arith.subf %in, %in_46 : f64
      linalg.yield %148 : f64
    } -> tensor<2x8x16xf64>
    %107 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%106, %106 : tensor<2x8x16xf64>, tensor<2x8x16xf64>) outs(%18 : tensor<2x8x16xf64>) {
    ^bb0(%in: f64, %in_46: f64, %out: f64):
      %148 = arith.mulf %in, %in_46 : f64
      linalg.yield %148 : f64
    } -> tensor<2x8x16xf64>
    %108 = linalg.generic {indexing_maps = [#map1, #map11], iterator_types = ["parallel", "parallel", "reduction"]} ins(%107 : tensor<2x8x16xf64>) outs(%21 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %148 = arith.addf %in, %out : f64
      linalg.yield %148 : f64
    } -> tensor<2x8x1xf64>
    %109 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%108 : tensor<2x8x1xf64>) outs(%20 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %148 = arith.divf %in, %cst_9 : f64
      linalg.yield %148 : f64
    } -> tensor<2x8x1xf64>
    %110 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%109 : tensor<2x8x1xf64>) outs(%28 : tensor<2x8x1xf32>) {
    ^bb0(%in: f64, %out: f32):
      %148 = arith.truncf %in : f64 to f32
      linalg.yield %148 : f32
    } -> tensor<2x8x1xf32>
    %111 = linalg.generic {indexing_maps = [#map1, #map11], iterator_types = ["parallel", "parallel", "reduction"]} ins(%102 : tensor<2x8x16xf32>) outs(%30 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %148 = arith.addf %in, %out : f32
      linalg.yield %148 : f32
    } -> tensor<2x8x1xf32>
    %112 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%111 : tensor<2x8x1xf32>) outs(%28 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %148 = arith.divf %in, %cst_10 : f32
      linalg.yield %148 : f32
    } -> tensor<2x8x1xf32>
    %113 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%110 : tensor<2x8x1xf32>) outs(%28 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %148 = arith.truncf %cst_8 : f64 to f32
      %149 = arith.addf %in, %148 : f32
      linalg.yield %149 : f32
    } -> tensor<2x8x1xf32>
    %114 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%113 : tensor<2x8x1xf32>) outs(%28 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %148 = math.rsqrt %in : f32
      linalg.yield %148 : f32
    } -> tensor<2x8x1xf32>
    %115 = linalg.generic {indexing_maps = [#map1, #map11, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%102, %112 : tensor<2x8x16xf32>, tensor<2x8x1xf32>) outs(%0 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_46: f32, %out: f32):
      %148 = arith.subf %in, %in_46 : f32
      linalg.yield %148 : f32
    } -> tensor<2x8x16xf32>
    %116 = linalg.generic {indexing_maps = [#map1, #map11, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%115, %114 : tensor<2x8x16xf32>, tensor<2x8x1xf32>) outs(%0 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_46: f32, %out: f32):
      %148 = arith.mulf %in, %in_46 : f32
      linalg.yield %148 : f32
    } -> tensor<2x8x16xf32>
    %117 = linalg.generic {indexing_maps = [#map1, #map12, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%116, %arg14 : tensor<2x8x16xf32>, tensor<16xf32>) outs(%0 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_46: f32, %out: f32):
      %148 = arith.mulf %in, %in_46 : f32
      linalg.yield %148 : f32
    } -> tensor<2x8x16xf32>
    %118 = linalg.generic {indexing_maps = [#map1, #map12, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%117, %arg15 : tensor<2x8x16xf32>, tensor<16xf32>) outs(%0 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_46: f32, %out: f32):
      %148 = arith.addf %in, %in_46 : f32
      linalg.yield %148 : f32
    } -> tensor<2x8x16xf32>
    %119 = tensor.empty() : tensor<16x32xf32>
    %transposed_39 = linalg.transpose ins(%arg0 : tensor<32x16xf32>) outs(%119 : tensor<16x32xf32>) permutation = [1, 0] 
    %collapsed_40 = tensor.collapse_shape %118 [[0, 1], [2]] : tensor<2x8x16xf32> into tensor<16x16xf32>
    %120 = linalg.fill ins(%cst_0 : f32) outs(%119 : tensor<16x32xf32>) -> tensor<16x32xf32>
    %121 = linalg.matmul ins(%collapsed_40, %transposed_39 : tensor<16x16xf32>, tensor<16x32xf32>) outs(%120 : tensor<16x32xf32>) -> tensor<16x32xf32>
    %padded = tensor.pad %arg16 low[0, 0] high[0, 1] {
    ^bb0(%arg17: index, %arg18: index):
      tensor.yield %c-100_i64 : i64
    } : tensor<2x8xi64> to tensor<2x9xi64>
    %extracted_slice_41 = tensor.extract_slice %padded[0, 1] [2, 8] [1, 1] : tensor<2x9xi64> to tensor<2x8xi64>
    %collapsed_42 = tensor.collapse_shape %extracted_slice_41 [[0, 1]] : tensor<2x8xi64> into tensor<16xi64>
    %122 = tensor.empty() : tensor<16xi64>
    %123 = linalg.fill ins(%c0_i64 : i64) outs(%122 : tensor<16xi64>) -> tensor<16xi64>
    %124 = tensor.empty() : tensor<16xf32>
    %125 = linalg.fill ins(%cst_1 : f32) outs(%124 : tensor<16xf32>) -> tensor<16xf32>
    %126:2 = linalg.generic {indexing_maps = [#map14, #map17, #map17], iterator_types = ["parallel", "reduction"]} ins(%121 : tensor<16x32xf32>) outs(%125, %123 : tensor<16xf32>, tensor<16xi64>) {
    ^bb0(%in: f32, %out: f32, %out_46: i64):
      %148 = linalg.index 1 : index
      %149 = arith.index_cast %148 : index to i64
      %150 = arith.maximumf %in, %out : f32
      %151 = arith.cmpf ogt, %in, %out : f32
      %152 = arith.select %151, %149, %out_46 : i64
      linalg.yield %150, %152 : f32, i64
    } -> (tensor<16xf32>, tensor<16xi64>)
    %expanded_43 = tensor.expand_shape %126#0 [[0, 1]] output_shape [16, 1] : tensor<16xf32> into tensor<16x1xf32>
    %127 = linalg.generic {indexing_maps = [#map14, #map18, #map14], iterator_types = ["parallel", "parallel"]} ins(%121, %expanded_43 : tensor<16x32xf32>, tensor<16x1xf32>) outs(%119 : tensor<16x32xf32>) {
    ^bb0(%in: f32, %in_46: f32, %out: f32):
      %148 = arith.subf %in, %in_46 : f32
      linalg.yield %148 : f32
    } -> tensor<16x32xf32>
    %128 = linalg.generic {indexing_maps = [#map14, #map14], iterator_types = ["parallel", "parallel"]} ins(%127 : tensor<16x32xf32>) outs(%119 : tensor<16x32xf32>) {
    ^bb0(%in: f32, %out: f32):
      %148 = math.exp %in : f32
      linalg.yield %148 : f32
    } -> tensor<16x32xf32>
    %129 = tensor.empty() : tensor<16x1xf32>
    %130 = linalg.fill ins(%cst_0 : f32) outs(%129 : tensor<16x1xf32>) -> tensor<16x1xf32>
    %131 = linalg.generic {indexing_maps = [#map14, #map18], iterator_types = ["parallel", "reduction"]} ins(%128 : tensor<16x32xf32>) outs(%130 : tensor<16x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %148 = arith.addf %in, %out : f32
      linalg.yield %148 : f32
    } -> tensor<16x1xf32>
    %132 = linalg.generic {indexing_maps = [#map14, #map14], iterator_types = ["parallel", "parallel"]} ins(%131 : tensor<16x1xf32>) outs(%129 : tensor<16x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %148 = math.log %in : f32
      linalg.yield %148 : f32
    } -> tensor<16x1xf32>
    %133 = linalg.generic {indexing_maps = [#map14, #map18, #map14], iterator_types = ["parallel", "parallel"]} ins(%127, %132 : tensor<16x32xf32>, tensor<16x1xf32>) outs(%119 : tensor<16x32xf32>) {
    ^bb0(%in: f32, %in_46: f32, %out: f32):
      %148 = arith.subf %in, %in_46 : f32
      linalg.yield %148 : f32
    } -> tensor<16x32xf32>
    %134 = tensor.empty() : tensor<16xi1>
    %135 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel"]} ins(%collapsed_42 : tensor<16xi64>) outs(%134 : tensor<16xi1>) {
    ^bb0(%in: i64, %out: i1):
      %148 = arith.cmpi ne, %in, %c-100_i64 : i64
      linalg.yield %148 : i1
    } -> tensor<16xi1>
    %136 = linalg.generic {indexing_maps = [#map2, #map2, #map19, #map2], iterator_types = ["parallel"]} ins(%135, %collapsed_42, %cst_13 : tensor<16xi1>, tensor<16xi64>, tensor<i64>) outs(%122 : tensor<16xi64>) {
    ^bb0(%in: i1, %in_46: i64, %in_47: i64, %out: i64):
      %148 = arith.select %in, %in_46, %in_47 : i64
      linalg.yield %148 : i64
    } -> tensor<16xi64>
    %expanded_44 = tensor.expand_shape %136 [[0, 1]] output_shape [16, 1] : tensor<16xi64> into tensor<16x1xi64>
    %137 = linalg.generic {indexing_maps = [#map14, #map14], iterator_types = ["parallel", "parallel"]} ins(%expanded_44 : tensor<16x1xi64>) outs(%130 : tensor<16x1xf32>) {
    ^bb0(%in: i64, %out: f32):
      %148 = linalg.index 0 : index
      %149 = arith.index_cast %in : i64 to index
      %150 = arith.cmpi slt, %149, %c32 : index
      cf.assert %150, "index must be smaller than dim size"
      %151 = arith.cmpi sge, %in, %c0_i64 : i64
      cf.assert %151, "index must be larger or equal to 0"
      %extracted = tensor.extract %133[%148, %149] : tensor<16x32xf32>
      linalg.yield %extracted : f32
    } -> tensor<16x1xf32>
    %collapsed_45 = tensor.collapse_shape %137 [[0, 1]] : tensor<16x1xf32> into tensor<16xf32>
    %138 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel"]} ins(%collapsed_45 : tensor<16xf32>) outs(%124 : tensor<16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %148 = arith.negf %in : f32
      linalg.yield %148 : f32
    } -> tensor<16xf32>
    %139 = linalg.generic {indexing_maps = [#map2, #map2, #map19, #map2], iterator_types = ["parallel"]} ins(%135, %138, %cst_3 : tensor<16xi1>, tensor<16xf32>, tensor<f32>) outs(%124 : tensor<16xf32>) {
    ^bb0(%in: i1, %in_46: f32, %in_47: f32, %out: f32):
      %148 = arith.select %in, %in_46, %in_47 : f32
      linalg.yield %148 : f32
    } -> tensor<16xf32>
    %140 = tensor.empty() : tensor<i64>
    %141 = linalg.fill ins(%c0_i64 : i64) outs(%140 : tensor<i64>) -> tensor<i64>
    %142 = linalg.generic {indexing_maps = [#map2, #map19], iterator_types = ["reduction"]} ins(%135 : tensor<16xi1>) outs(%141 : tensor<i64>) {
    ^bb0(%in: i1, %out: i64):
      %148 = arith.extui %in : i1 to i64
      %149 = arith.addi %148, %out : i64
      linalg.yield %149 : i64
    } -> tensor<i64>
    %143 = tensor.empty() : tensor<f32>
    %144 = linalg.generic {indexing_maps = [#map20, #map20], iterator_types = []} ins(%142 : tensor<i64>) outs(%143 : tensor<f32>) {
    ^bb0(%in: i64, %out: f32):
      %148 = arith.sitofp %in : i64 to f32
      linalg.yield %148 : f32
    } -> tensor<f32>
    %145 = linalg.fill ins(%cst_0 : f32) outs(%143 : tensor<f32>) -> tensor<f32>
    %146 = linalg.generic {indexing_maps = [#map2, #map19], iterator_types = ["reduction"]} ins(%139 : tensor<16xf32>) outs(%145 : tensor<f32>) {
    ^bb0(%in: f32, %out: f32):
      %148 = arith.addf %in, %out : f32
      linalg.yield %148 : f32
    } -> tensor<f32>
    %147 = linalg.generic {indexing_maps = [#map20, #map20, #map20], iterator_types = []} ins(%146, %144 : tensor<f32>, tensor<f32>) outs(%143 : tensor<f32>) {
    ^bb0(%in: f32, %in_46: f32, %out: f32):
      %148 = arith.divf %in, %in_46 : f32
      linalg.yield %148 : f32
    } -> tensor<f32>
    return %147 : tensor<f32>
  }
}
