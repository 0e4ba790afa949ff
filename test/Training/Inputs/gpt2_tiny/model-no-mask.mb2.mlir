#map = affine_map<(d0, d1, d2) -> (d0, d1)>
#map1 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map2 = affine_map<(d0) -> (d0)>
#map3 = affine_map<(d0, d1, d2) -> (0, d1, d2)>
#map4 = affine_map<(d0, d1) -> (d1)>
#map5 = affine_map<(d0, d1) -> (d0, d1)>
#map6 = affine_map<(d0, d1, d2, d3) -> (d0, 0, 0, 0)>
#map7 = affine_map<(d0, d1, d2, d3) -> (0, 0, d2, 0)>
#map8 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map9 = affine_map<(d0, d1, d2, d3) -> (0, 0, 0, d3)>
#map10 = affine_map<(d0, d1, d2, d3) -> (d0, d1, 0, d3)>
#map11 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
#map12 = affine_map<(d0, d1, d2, d3) -> ()>
#map13 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
#map14 = affine_map<(d0, d1, d2) -> (d2)>
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
    %c2_i64 = arith.constant 2 : i64
    %c1_i64 = arith.constant 1 : i64
    %c8_i64 = arith.constant 8 : i64
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
    %cst_9 = arith.constant 1.600000e+01 : f64
    %cst_10 = arith.constant 1.600000e+01 : f32
    %cst_11 = arith.constant 5.000000e-01 : f32
    %cst_12 = arith.constant 1.000000e+00 : f32
    %c0_i64 = arith.constant 0 : i64
    %cst_13 = arith.constant dense<0> : tensor<i64>
    %0 = tensor.empty() : tensor<2x8x16xf32>
    %1 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg16 : tensor<2x8xi64>) outs(%0 : tensor<2x8x16xf32>) {
    ^bb0(%in: i64, %out: f32):
      %163 = arith.index_cast %in : i64 to index
      %164 = linalg.index 2 : index
      %165 = arith.cmpi slt, %163, %c32 : index
      cf.assert %165, "index must be smaller than dim size"
      %166 = arith.cmpi sge, %in, %c0_i64 : i64
      cf.assert %166, "index must be larger or equal to 0"
      %extracted = tensor.extract %arg0[%163, %164] : tensor<32x16xf32>
      linalg.yield %extracted : f32
    } -> tensor<2x8x16xf32>
    %2 = tensor.empty() : tensor<8xi64>
    %3 = linalg.generic {indexing_maps = [#map2], iterator_types = ["parallel"]} outs(%2 : tensor<8xi64>) {
    ^bb0(%out: i64):
      %163 = linalg.index 0 : index
      %164 = arith.index_cast %163 : index to i64
      linalg.yield %164 : i64
    } -> tensor<8xi64>
    %expanded = tensor.expand_shape %3 [[0, 1]] output_shape [1, 8] : tensor<8xi64> into tensor<1x8xi64>
    %4 = tensor.empty() : tensor<1x8x16xf32>
    %5 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded : tensor<1x8xi64>) outs(%4 : tensor<1x8x16xf32>) {
    ^bb0(%in: i64, %out: f32):
      %163 = arith.index_cast %in : i64 to index
      %164 = linalg.index 2 : index
      %165 = arith.cmpi slt, %163, %c8 : index
      cf.assert %165, "index must be smaller than dim size"
      %166 = arith.cmpi sge, %in, %c0_i64 : i64
      cf.assert %166, "index must be larger or equal to 0"
      %extracted = tensor.extract %arg1[%163, %164] : tensor<8x16xf32>
      linalg.yield %extracted : f32
    } -> tensor<1x8x16xf32>
    %6 = linalg.generic {indexing_maps = [#map1, #map3, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%1, %5 : tensor<2x8x16xf32>, tensor<1x8x16xf32>) outs(%0 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_49: f32, %out: f32):
      %163 = arith.addf %in, %in_49 : f32
      linalg.yield %163 : f32
    } -> tensor<2x8x16xf32>
    %7 = tensor.empty() : tensor<2x8xi64>
    %8 = linalg.generic {indexing_maps = [#map4, #map5], iterator_types = ["parallel", "parallel"]} ins(%3 : tensor<8xi64>) outs(%7 : tensor<2x8xi64>) {
    ^bb0(%in: i64, %out: i64):
      linalg.yield %in : i64
    } -> tensor<2x8xi64>
    %extracted_slice = tensor.extract_slice %8[0, 0] [2, 1] [1, 1] : tensor<2x8xi64> to tensor<2x1xi64>
    %9 = tensor.empty() : tensor<2x1xi64>
    %10 = linalg.generic {indexing_maps = [#map5, #map5], iterator_types = ["parallel", "parallel"]} ins(%extracted_slice : tensor<2x1xi64>) outs(%9 : tensor<2x1xi64>) {
    ^bb0(%in: i64, %out: i64):
      %163 = arith.subi %in, %c1_i64 : i64
      linalg.yield %163 : i64
    } -> tensor<2x1xi64>
    %concat = tensor.concat dim(1) %10, %8 : (tensor<2x1xi64>, tensor<2x8xi64>) -> tensor<2x9xi64>
    %extracted_slice_14 = tensor.extract_slice %concat[0, 0] [2, 8] [1, 1] : tensor<2x9xi64> to tensor<2x8xi64>
    %extracted_slice_15 = tensor.extract_slice %concat[0, 1] [2, 8] [1, 1] : tensor<2x9xi64> to tensor<2x8xi64>
    %11 = linalg.generic {indexing_maps = [#map5, #map5, #map5], iterator_types = ["parallel", "parallel"]} ins(%extracted_slice_15, %extracted_slice_14 : tensor<2x8xi64>, tensor<2x8xi64>) outs(%7 : tensor<2x8xi64>) {
    ^bb0(%in: i64, %in_49: i64, %out: i64):
      %163 = arith.subi %in, %in_49 : i64
      linalg.yield %163 : i64
    } -> tensor<2x8xi64>
    %12 = tensor.empty() : tensor<2x8xi1>
    %13 = linalg.generic {indexing_maps = [#map5, #map5], iterator_types = ["parallel", "parallel"]} ins(%11 : tensor<2x8xi64>) outs(%12 : tensor<2x8xi1>) {
    ^bb0(%in: i64, %out: i1):
      %163 = arith.cmpi ne, %in, %c1_i64 : i64
      linalg.yield %163 : i1
    } -> tensor<2x8xi1>
    %14 = linalg.generic {indexing_maps = [#map5, #map5], iterator_types = ["parallel", "parallel"]} ins(%13 : tensor<2x8xi1>) outs(%7 : tensor<2x8xi64>) {
    ^bb0(%in: i1, %out: i64):
      %163 = arith.extui %in : i1 to i64
      linalg.yield %163 : i64
    } -> tensor<2x8xi64>
    %15 = linalg.fill ins(%c0_i64 : i64) outs(%7 : tensor<2x8xi64>) -> tensor<2x8xi64>
    %16 = tensor.empty() : tensor<2xi64>
    %17 = linalg.fill ins(%c0_i64 : i64) outs(%16 : tensor<2xi64>) -> tensor<2xi64>
    %18:2 = tm_tensor.scan dimension(1) inclusive(true) ins(%14 : tensor<2x8xi64>) outs(%15, %17 : tensor<2x8xi64>, tensor<2xi64>) {
    ^bb0(%arg17: i64, %arg18: i64):
      %163 = arith.addi %arg17, %arg18 : i64
      tm_tensor.yield %163 : i64
    } -> tensor<2x8xi64>, tensor<2xi64>
    %19 = linalg.generic {indexing_maps = [#map2], iterator_types = ["parallel"]} outs(%16 : tensor<2xi64>) {
    ^bb0(%out: i64):
      %163 = linalg.index 0 : index
      %164 = arith.index_cast %163 : index to i64
      linalg.yield %164 : i64
    } -> tensor<2xi64>
    %expanded_16 = tensor.expand_shape %19 [[0, 1, 2, 3]] output_shape [2, 1, 1, 1] : tensor<2xi64> into tensor<2x1x1x1xi64>
    %expanded_17 = tensor.expand_shape %3 [[0, 1, 2, 3]] output_shape [1, 1, 8, 1] : tensor<8xi64> into tensor<1x1x8x1xi64>
    %expanded_18 = tensor.expand_shape %3 [[0, 1, 2, 3]] output_shape [1, 1, 1, 8] : tensor<8xi64> into tensor<1x1x1x8xi64>
    %20 = tensor.empty() : tensor<2x1x8x1xi64>
    %21 = linalg.generic {indexing_maps = [#map6, #map7, #map8], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded_16, %expanded_17 : tensor<2x1x1x1xi64>, tensor<1x1x8x1xi64>) outs(%20 : tensor<2x1x8x1xi64>) {
    ^bb0(%in: i64, %in_49: i64, %out: i64):
      %163 = arith.cmpi slt, %in, %c0_i64 : i64
      %164 = arith.addi %in, %c2_i64 : i64
      %165 = arith.select %163, %164, %in : i64
      %166 = arith.index_cast %165 : i64 to index
      %167 = arith.cmpi slt, %in_49, %c0_i64 : i64
      %168 = arith.addi %in_49, %c8_i64 : i64
      %169 = arith.select %167, %168, %in_49 : i64
      %170 = arith.index_cast %169 : i64 to index
      %extracted = tensor.extract %8[%166, %170] : tensor<2x8xi64>
      linalg.yield %extracted : i64
    } -> tensor<2x1x8x1xi64>
    %22 = tensor.empty() : tensor<2x1x1x8xi64>
    %23 = linalg.generic {indexing_maps = [#map6, #map9, #map8], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded_16, %expanded_18 : tensor<2x1x1x1xi64>, tensor<1x1x1x8xi64>) outs(%22 : tensor<2x1x1x8xi64>) {
    ^bb0(%in: i64, %in_49: i64, %out: i64):
      %163 = arith.cmpi slt, %in, %c0_i64 : i64
      %164 = arith.addi %in, %c2_i64 : i64
      %165 = arith.select %163, %164, %in : i64
      %166 = arith.index_cast %165 : i64 to index
      %167 = arith.cmpi slt, %in_49, %c0_i64 : i64
      %168 = arith.addi %in_49, %c8_i64 : i64
      %169 = arith.select %167, %168, %in_49 : i64
      %170 = arith.index_cast %169 : i64 to index
      %extracted = tensor.extract %8[%166, %170] : tensor<2x8xi64>
      linalg.yield %extracted : i64
    } -> tensor<2x1x1x8xi64>
    %24 = tensor.empty() : tensor<2x1x8x8xi1>
    %25 = linalg.generic {indexing_maps = [#map10, #map11, #map8], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%23, %21 : tensor<2x1x1x8xi64>, tensor<2x1x8x1xi64>) outs(%24 : tensor<2x1x8x8xi1>) {
    ^bb0(%in: i64, %in_49: i64, %out: i1):
      %163 = arith.cmpi sle, %in, %in_49 : i64
      linalg.yield %163 : i1
    } -> tensor<2x1x8x8xi1>
    %26 = linalg.generic {indexing_maps = [#map12, #map8, #map8], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%cst_4, %25 : tensor<i1>, tensor<2x1x8x8xi1>) outs(%24 : tensor<2x1x8x8xi1>) {
    ^bb0(%in: i1, %in_49: i1, %out: i1):
      %163 = arith.andi %in, %in_49 : i1
      linalg.yield %163 : i1
    } -> tensor<2x1x8x8xi1>
    %27 = linalg.generic {indexing_maps = [#map6, #map7, #map8], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded_16, %expanded_17 : tensor<2x1x1x1xi64>, tensor<1x1x8x1xi64>) outs(%20 : tensor<2x1x8x1xi64>) {
    ^bb0(%in: i64, %in_49: i64, %out: i64):
      %163 = arith.cmpi slt, %in, %c0_i64 : i64
      %164 = arith.addi %in, %c2_i64 : i64
      %165 = arith.select %163, %164, %in : i64
      %166 = arith.index_cast %165 : i64 to index
      %167 = arith.cmpi slt, %in_49, %c0_i64 : i64
      %168 = arith.addi %in_49, %c8_i64 : i64
      %169 = arith.select %167, %168, %in_49 : i64
      %170 = arith.index_cast %169 : i64 to index
      %extracted = tensor.extract %18#0[%166, %170] : tensor<2x8xi64>
      linalg.yield %extracted : i64
    } -> tensor<2x1x8x1xi64>
    %28 = linalg.generic {indexing_maps = [#map6, #map9, #map8], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded_16, %expanded_18 : tensor<2x1x1x1xi64>, tensor<1x1x1x8xi64>) outs(%22 : tensor<2x1x1x8xi64>) {
    ^bb0(%in: i64, %in_49: i64, %out: i64):
      %163 = arith.cmpi slt, %in, %c0_i64 : i64
      %164 = arith.addi %in, %c2_i64 : i64
      %165 = arith.select %163, %164, %in : i64
      %166 = arith.index_cast %165 : i64 to index
      %167 = arith.cmpi slt, %in_49, %c0_i64 : i64
      %168 = arith.addi %in_49, %c8_i64 : i64
      %169 = arith.select %167, %168, %in_49 : i64
      %170 = arith.index_cast %169 : i64 to index
      %extracted = tensor.extract %18#0[%166, %170] : tensor<2x8xi64>
      linalg.yield %extracted : i64
    } -> tensor<2x1x1x8xi64>
    %29 = linalg.generic {indexing_maps = [#map11, #map10, #map8], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%27, %28 : tensor<2x1x8x1xi64>, tensor<2x1x1x8xi64>) outs(%24 : tensor<2x1x8x8xi1>) {
    ^bb0(%in: i64, %in_49: i64, %out: i1):
      %163 = arith.cmpi eq, %in, %in_49 : i64
      linalg.yield %163 : i1
    } -> tensor<2x1x8x8xi1>
    %30 = linalg.generic {indexing_maps = [#map8, #map8, #map8], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%26, %29 : tensor<2x1x8x8xi1>, tensor<2x1x8x8xi1>) outs(%24 : tensor<2x1x8x8xi1>) {
    ^bb0(%in: i1, %in_49: i1, %out: i1):
      %163 = arith.andi %in, %in_49 : i1
      linalg.yield %163 : i1
    } -> tensor<2x1x8x8xi1>
    %31 = tensor.empty() : tensor<2x1x8x8xf32>
    %32 = linalg.generic {indexing_maps = [#map8, #map12, #map12, #map8], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%30, %cst_3, %cst_2 : tensor<2x1x8x8xi1>, tensor<f32>, tensor<f32>) outs(%31 : tensor<2x1x8x8xf32>) {
    ^bb0(%in: i1, %in_49: f32, %in_50: f32, %out: f32):
      %163 = arith.select %in, %in_49, %in_50 : f32
      linalg.yield %163 : f32
    } -> tensor<2x1x8x8xf32>
    %33 = tensor.empty() : tensor<2x8x16xf64>
    %34 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%6 : tensor<2x8x16xf32>) outs(%33 : tensor<2x8x16xf64>) {
    ^bb0(%in: f32, %out: f64):
      %163 = arith.extf %in : f32 to f64
      linalg.yield %163 : f64
    } -> tensor<2x8x16xf64>
    %35 = tensor.empty() : tensor<2x8x1xf64>
    %36 = linalg.fill ins(%cst : f64) outs(%35 : tensor<2x8x1xf64>) -> tensor<2x8x1xf64>
    %37 = linalg.generic {indexing_maps = [#map1, #map13], iterator_types = ["parallel", "parallel", "reduction"]} ins(%34 : tensor<2x8x16xf64>) outs(%36 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %163 = arith.addf %in, %out : f64
      linalg.yield %163 : f64
    } -> tensor<2x8x1xf64>
    %38 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%37 : tensor<2x8x1xf64>) outs(%35 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %163 = arith.divf %in, %cst_9 : f64
      linalg.yield %163 : f64
    } -> tensor<2x8x1xf64>
    %39 = linalg.generic {indexing_maps = [#map1, #map13, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%34, %38 : tensor<2x8x16xf64>, tensor<2x8x1xf64>) outs(%33 : tensor<2x8x16xf64>) {
    ^bb0(%in: f64, %in_49: f64, %out: f64):
      %163 = arith.subf %in, %in_49 : f64
      linalg.yield %163 : f64
    } -> tensor<2x8x16xf64>
    %40 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%39, %39 : tensor<2x8x16xf64>, tensor<2x8x16xf64>) outs(%33 : tensor<2x8x16xf64>) {
    ^bb0(%in: f64, %in_49: f64, %out: f64):
      %163 = arith.mulf %in, %in_49 : f64
      linalg.yield %163 : f64
    } -> tensor<2x8x16xf64>
    %41 = linalg.generic {indexing_maps = [#map1, #map13], iterator_types = ["parallel", "parallel", "reduction"]} ins(%40 : tensor<2x8x16xf64>) outs(%36 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %163 = arith.addf %in, %out : f64
      linalg.yield %163 : f64
    } -> tensor<2x8x1xf64>
    %42 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%41 : tensor<2x8x1xf64>) outs(%35 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %163 = arith.divf %in, %cst_9 : f64
      linalg.yield %163 : f64
    } -> tensor<2x8x1xf64>
    %43 = tensor.empty() : tensor<2x8x1xf32>
    %44 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%42 : tensor<2x8x1xf64>) outs(%43 : tensor<2x8x1xf32>) {
    ^bb0(%in: f64, %out: f32):
      %163 = arith.truncf %in : f64 to f32
      linalg.yield %163 : f32
    } -> tensor<2x8x1xf32>
    %45 = linalg.fill ins(%cst_0 : f32) outs(%43 : tensor<2x8x1xf32>) -> tensor<2x8x1xf32>
    %46 = linalg.generic {indexing_maps = [#map1, #map13], iterator_types = ["parallel", "parallel", "reduction"]} ins(%6 : tensor<2x8x16xf32>) outs(%45 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %163 = arith.addf %in, %out : f32
      linalg.yield %163 : f32
    } -> tensor<2x8x1xf32>
    %47 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%46 : tensor<2x8x1xf32>) outs(%43 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %163 = arith.divf %in, %cst_10 : f32
      linalg.yield %163 : f32
    } -> tensor<2x8x1xf32>
    %48 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%44 : tensor<2x8x1xf32>) outs(%43 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %163 = arith.truncf %cst_8 : f64 to f32
      %164 = arith.addf %in, %163 : f32
      linalg.yield %164 : f32
    } -> tensor<2x8x1xf32>
    %49 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%48 : tensor<2x8x1xf32>) outs(%43 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %163 = math.rsqrt %in : f32
      linalg.yield %163 : f32
    } -> tensor<2x8x1xf32>
    %50 = linalg.generic {indexing_maps = [#map1, #map13, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%6, %47 : tensor<2x8x16xf32>, tensor<2x8x1xf32>) outs(%0 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_49: f32, %out: f32):
      %163 = arith.subf %in, %in_49 : f32
      linalg.yield %163 : f32
    } -> tensor<2x8x16xf32>
    %51 = linalg.generic {indexing_maps = [#map1, #map13, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%50, %49 : tensor<2x8x16xf32>, tensor<2x8x1xf32>) outs(%0 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_49: f32, %out: f32):
      %163 = arith.mulf %in, %in_49 : f32
      linalg.yield %163 : f32
    } -> tensor<2x8x16xf32>
    %52 = linalg.generic {indexing_maps = [#map1, #map14, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%51, %arg2 : tensor<2x8x16xf32>, tensor<16xf32>) outs(%0 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_49: f32, %out: f32):
      %163 = arith.mulf %in, %in_49 : f32
      linalg.yield %163 : f32
    } -> tensor<2x8x16xf32>
    %53 = linalg.generic {indexing_maps = [#map1, #map14, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%52, %arg3 : tensor<2x8x16xf32>, tensor<16xf32>) outs(%0 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_49: f32, %out: f32):
      %163 = arith.addf %in, %in_49 : f32
      linalg.yield %163 : f32
    } -> tensor<2x8x16xf32>
    %collapsed = tensor.collapse_shape %53 [[0, 1], [2]] : tensor<2x8x16xf32> into tensor<16x16xf32>
    %54 = tensor.empty() : tensor<16x48xf32>
    %55 = linalg.fill ins(%cst_0 : f32) outs(%54 : tensor<16x48xf32>) -> tensor<16x48xf32>
    %56 = linalg.matmul ins(%collapsed, %arg4 : tensor<16x16xf32>, tensor<16x48xf32>) outs(%55 : tensor<16x48xf32>) -> tensor<16x48xf32>
    %57 = linalg.generic {indexing_maps = [#map4, #map5], iterator_types = ["parallel", "parallel"]} ins(%arg5 : tensor<48xf32>) outs(%54 : tensor<16x48xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<16x48xf32>
    %58 = linalg.generic {indexing_maps = [#map5, #map5, #map5], iterator_types = ["parallel", "parallel"]} ins(%56, %57 : tensor<16x48xf32>, tensor<16x48xf32>) outs(%54 : tensor<16x48xf32>) {
    ^bb0(%in: f32, %in_49: f32, %out: f32):
      %163 = arith.addf %in, %in_49 : f32
      linalg.yield %163 : f32
    } -> tensor<16x48xf32>
    %expanded_19 = tensor.expand_shape %58 [[0, 1], [2]] output_shape [2, 8, 48] : tensor<16x48xf32> into tensor<2x8x48xf32>
    %extracted_slice_20 = tensor.extract_slice %expanded_19[0, 0, 0] [2, 8, 16] [1, 1, 1] : tensor<2x8x48xf32> to tensor<2x8x16xf32>
    %extracted_slice_21 = tensor.extract_slice %expanded_19[0, 0, 16] [2, 8, 16] [1, 1, 1] : tensor<2x8x48xf32> to tensor<2x8x16xf32>
    %extracted_slice_22 = tensor.extract_slice %expanded_19[0, 0, 32] [2, 8, 16] [1, 1, 1] : tensor<2x8x48xf32> to tensor<2x8x16xf32>
    %expanded_23 = tensor.expand_shape %extracted_slice_21 [[0], [1], [2, 3]] output_shape [2, 8, 2, 8] : tensor<2x8x16xf32> into tensor<2x8x2x8xf32>
    %expanded_24 = tensor.expand_shape %extracted_slice_22 [[0], [1], [2, 3]] output_shape [2, 8, 2, 8] : tensor<2x8x16xf32> into tensor<2x8x2x8xf32>
    %59 = tensor.empty() : tensor<2x2x8x8xf32>
    %transposed = linalg.transpose ins(%expanded_24 : tensor<2x8x2x8xf32>) outs(%59 : tensor<2x2x8x8xf32>) permutation = [0, 2, 1, 3] 
    %expanded_25 = tensor.expand_shape %extracted_slice_20 [[0], [1], [2, 3]] output_shape [2, 8, 2, 8] : tensor<2x8x16xf32> into tensor<2x8x2x8xf32>
    %transposed_26 = linalg.transpose ins(%expanded_25 : tensor<2x8x2x8xf32>) outs(%59 : tensor<2x2x8x8xf32>) permutation = [0, 2, 1, 3] 
    %transposed_27 = linalg.transpose ins(%expanded_23 : tensor<2x8x2x8xf32>) outs(%59 : tensor<2x2x8x8xf32>) permutation = [0, 2, 3, 1] 
    %collapsed_28 = tensor.collapse_shape %transposed_26 [[0, 1], [2], [3]] : tensor<2x2x8x8xf32> into tensor<4x8x8xf32>
    %collapsed_29 = tensor.collapse_shape %transposed_27 [[0, 1], [2], [3]] : tensor<2x2x8x8xf32> into tensor<4x8x8xf32>
    %60 = tensor.empty() : tensor<4x8x8xf32>
    %61 = linalg.fill ins(%cst_0 : f32) outs(%60 : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
    %62 = linalg.batch_matmul ins(%collapsed_28, %collapsed_29 : tensor<4x8x8xf32>, tensor<4x8x8xf32>) outs(%61 : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
    %expanded_30 = tensor.expand_shape %62 [[0, 1], [2], [3]] output_shape [2, 2, 8, 8] : tensor<4x8x8xf32> into tensor<2x2x8x8xf32>
    %63 = linalg.generic {indexing_maps = [#map8, #map8], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded_30 : tensor<2x2x8x8xf32>) outs(%59 : tensor<2x2x8x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %163 = arith.truncf %cst_7 : f64 to f32
      %164 = arith.mulf %in, %163 : f32
      linalg.yield %164 : f32
    } -> tensor<2x2x8x8xf32>
    %64 = linalg.generic {indexing_maps = [#map8, #map15, #map8], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%63, %32 : tensor<2x2x8x8xf32>, tensor<2x1x8x8xf32>) outs(%59 : tensor<2x2x8x8xf32>) {
    ^bb0(%in: f32, %in_49: f32, %out: f32):
      %163 = arith.addf %in, %in_49 : f32
      linalg.yield %163 : f32
    } -> tensor<2x2x8x8xf32>
    %65 = tensor.empty() : tensor<2x2x8xi64>
    %66 = linalg.fill ins(%c0_i64 : i64) outs(%65 : tensor<2x2x8xi64>) -> tensor<2x2x8xi64>
    %67 = tensor.empty() : tensor<2x2x8xf32>
    %68 = linalg.fill ins(%cst_1 : f32) outs(%67 : tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
    %69:2 = linalg.generic {indexing_maps = [#map8, #map16, #map16], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%64 : tensor<2x2x8x8xf32>) outs(%68, %66 : tensor<2x2x8xf32>, tensor<2x2x8xi64>) {
    ^bb0(%in: f32, %out: f32, %out_49: i64):
      %163 = linalg.index 3 : index
      %164 = arith.index_cast %163 : index to i64
      %165 = arith.maximumf %in, %out : f32
      %166 = arith.cmpf ogt, %in, %out : f32
      %167 = arith.select %166, %164, %out_49 : i64
      linalg.yield %165, %167 : f32, i64
    } -> (tensor<2x2x8xf32>, tensor<2x2x8xi64>)
    %expanded_31 = tensor.expand_shape %69#0 [[0], [1], [2, 3]] output_shape [2, 2, 8, 1] : tensor<2x2x8xf32> into tensor<2x2x8x1xf32>
    %70 = linalg.generic {indexing_maps = [#map8, #map11, #map8], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%64, %expanded_31 : tensor<2x2x8x8xf32>, tensor<2x2x8x1xf32>) outs(%59 : tensor<2x2x8x8xf32>) {
    ^bb0(%in: f32, %in_49: f32, %out: f32):
      %163 = arith.subf %in, %in_49 : f32
      linalg.yield %163 : f32
    } -> tensor<2x2x8x8xf32>
    %71 = linalg.generic {indexing_maps = [#map8, #map8], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%70 : tensor<2x2x8x8xf32>) outs(%59 : tensor<2x2x8x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %163 = math.exp %in : f32
      linalg.yield %163 : f32
    } -> tensor<2x2x8x8xf32>
    %72 = tensor.empty() : tensor<2x2x8x1xf32>
    %73 = linalg.fill ins(%cst_0 : f32) outs(%72 : tensor<2x2x8x1xf32>) -> tensor<2x2x8x1xf32>
    %74 = linalg.generic {indexing_maps = [#map8, #map11], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%71 : tensor<2x2x8x8xf32>) outs(%73 : tensor<2x2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %163 = arith.addf %in, %out : f32
      linalg.yield %163 : f32
    } -> tensor<2x2x8x1xf32>
    %75 = linalg.generic {indexing_maps = [#map8, #map11, #map8], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%71, %74 : tensor<2x2x8x8xf32>, tensor<2x2x8x1xf32>) outs(%59 : tensor<2x2x8x8xf32>) {
    ^bb0(%in: f32, %in_49: f32, %out: f32):
      %163 = arith.divf %in, %in_49 : f32
      linalg.yield %163 : f32
    } -> tensor<2x2x8x8xf32>
    %collapsed_32 = tensor.collapse_shape %75 [[0, 1], [2], [3]] : tensor<2x2x8x8xf32> into tensor<4x8x8xf32>
    %collapsed_33 = tensor.collapse_shape %transposed [[0, 1], [2], [3]] : tensor<2x2x8x8xf32> into tensor<4x8x8xf32>
    %76 = linalg.batch_matmul ins(%collapsed_32, %collapsed_33 : tensor<4x8x8xf32>, tensor<4x8x8xf32>) outs(%61 : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
    %expanded_34 = tensor.expand_shape %76 [[0, 1], [2], [3]] output_shape [2, 2, 8, 8] : tensor<4x8x8xf32> into tensor<2x2x8x8xf32>
    %77 = tensor.empty() : tensor<2x8x2x8xf32>
    %transposed_35 = linalg.transpose ins(%expanded_34 : tensor<2x2x8x8xf32>) outs(%77 : tensor<2x8x2x8xf32>) permutation = [0, 2, 1, 3] 
    %collapsed_36 = tensor.collapse_shape %transposed_35 [[0, 1], [2, 3]] : tensor<2x8x2x8xf32> into tensor<16x16xf32>
    %78 = tensor.empty() : tensor<16x16xf32>
    %79 = linalg.fill ins(%cst_0 : f32) outs(%78 : tensor<16x16xf32>) -> tensor<16x16xf32>
    %80 = linalg.matmul ins(%collapsed_36, %arg6 : tensor<16x16xf32>, tensor<16x16xf32>) outs(%79 : tensor<16x16xf32>) -> tensor<16x16xf32>
    %81 = linalg.generic {indexing_maps = [#map4, #map5], iterator_types = ["parallel", "parallel"]} ins(%arg7 : tensor<16xf32>) outs(%78 : tensor<16x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<16x16xf32>
    %82 = linalg.generic {indexing_maps = [#map5, #map5, #map5], iterator_types = ["parallel", "parallel"]} ins(%80, %81 : tensor<16x16xf32>, tensor<16x16xf32>) outs(%78 : tensor<16x16xf32>) {
    ^bb0(%in: f32, %in_49: f32, %out: f32):
      %163 = arith.addf %in, %in_49 : f32
      linalg.yield %163 : f32
    } -> tensor<16x16xf32>
    %expanded_37 = tensor.expand_shape %82 [[0, 1], [2]] output_shape [2, 8, 16] : tensor<16x16xf32> into tensor<2x8x16xf32>
    %83 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded_37, %6 : tensor<2x8x16xf32>, tensor<2x8x16xf32>) outs(%0 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_49: f32, %out: f32):
      %163 = arith.addf %in, %in_49 : f32
      linalg.yield %163 : f32
    } -> tensor<2x8x16xf32>
    %84 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%83 : tensor<2x8x16xf32>) outs(%33 : tensor<2x8x16xf64>) {
    ^bb0(%in: f32, %out: f64):
      %163 = arith.extf %in : f32 to f64
      linalg.yield %163 : f64
    } -> tensor<2x8x16xf64>
    %85 = linalg.generic {indexing_maps = [#map1, #map13], iterator_types = ["parallel", "parallel", "reduction"]} ins(%84 : tensor<2x8x16xf64>) outs(%36 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %163 = arith.addf %in, %out : f64
      linalg.yield %163 : f64
    } -> tensor<2x8x1xf64>
    %86 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%85 : tensor<2x8x1xf64>) outs(%35 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %163 = arith.divf %in, %cst_9 : f64
      linalg.yield %163 : f64
    } -> tensor<2x8x1xf64>
    %87 = linalg.generic {indexing_maps = [#map1, #map13, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%84, %86 : tensor<2x8x16xf64>, tensor<2x8x1xf64>) outs(%33 : tensor<2x8x16xf64>) {
    ^bb0(%in: f64, %in_49: f64, %out: f64):
      %163 = arith.subf %in, %in_49 : f64
      linalg.yield %163 : f64
    } -> tensor<2x8x16xf64>
    %88 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%87, %87 : tensor<2x8x16xf64>, tensor<2x8x16xf64>) outs(%33 : tensor<2x8x16xf64>) {
    ^bb0(%in: f64, %in_49: f64, %out: f64):
      %163 = arith.mulf %in, %in_49 : f64
      linalg.yield %163 : f64
    } -> tensor<2x8x16xf64>
    %89 = linalg.generic {indexing_maps = [#map1, #map13], iterator_types = ["parallel", "parallel", "reduction"]} ins(%88 : tensor<2x8x16xf64>) outs(%36 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %163 = arith.addf %in, %out : f64
      linalg.yield %163 : f64
    } -> tensor<2x8x1xf64>
    %90 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%89 : tensor<2x8x1xf64>) outs(%35 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %163 = arith.divf %in, %cst_9 : f64
      linalg.yield %163 : f64
    } -> tensor<2x8x1xf64>
    %91 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%90 : tensor<2x8x1xf64>) outs(%43 : tensor<2x8x1xf32>) {
    ^bb0(%in: f64, %out: f32):
      %163 = arith.truncf %in : f64 to f32
      linalg.yield %163 : f32
    } -> tensor<2x8x1xf32>
    %92 = linalg.generic {indexing_maps = [#map1, #map13], iterator_types = ["parallel", "parallel", "reduction"]} ins(%83 : tensor<2x8x16xf32>) outs(%45 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %163 = arith.addf %in, %out : f32
      linalg.yield %163 : f32
    } -> tensor<2x8x1xf32>
    %93 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%92 : tensor<2x8x1xf32>) outs(%43 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %163 = arith.divf %in, %cst_10 : f32
      linalg.yield %163 : f32
    } -> tensor<2x8x1xf32>
    %94 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%91 : tensor<2x8x1xf32>) outs(%43 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %163 = arith.truncf %cst_8 : f64 to f32
      %164 = arith.addf %in, %163 : f32
      linalg.yield %164 : f32
    } -> tensor<2x8x1xf32>
    %95 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%94 : tensor<2x8x1xf32>) outs(%43 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %163 = math.rsqrt %in : f32
      linalg.yield %163 : f32
    } -> tensor<2x8x1xf32>
    %96 = linalg.generic {indexing_maps = [#map1, #map13, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%83, %93 : tensor<2x8x16xf32>, tensor<2x8x1xf32>) outs(%0 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_49: f32, %out: f32):
      %163 = arith.subf %in, %in_49 : f32
      linalg.yield %163 : f32
    } -> tensor<2x8x16xf32>
    %97 = linalg.generic {indexing_maps = [#map1, #map13, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%96, %95 : tensor<2x8x16xf32>, tensor<2x8x1xf32>) outs(%0 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_49: f32, %out: f32):
      %163 = arith.mulf %in, %in_49 : f32
      linalg.yield %163 : f32
    } -> tensor<2x8x16xf32>
    %98 = linalg.generic {indexing_maps = [#map1, #map14, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%97, %arg8 : tensor<2x8x16xf32>, tensor<16xf32>) outs(%0 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_49: f32, %out: f32):
      %163 = arith.mulf %in, %in_49 : f32
      linalg.yield %163 : f32
    } -> tensor<2x8x16xf32>
    %99 = linalg.generic {indexing_maps = [#map1, #map14, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%98, %arg9 : tensor<2x8x16xf32>, tensor<16xf32>) outs(%0 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_49: f32, %out: f32):
      %163 = arith.addf %in, %in_49 : f32
      linalg.yield %163 : f32
    } -> tensor<2x8x16xf32>
    %collapsed_38 = tensor.collapse_shape %99 [[0, 1], [2]] : tensor<2x8x16xf32> into tensor<16x16xf32>
    %100 = tensor.empty() : tensor<16x64xf32>
    %101 = linalg.fill ins(%cst_0 : f32) outs(%100 : tensor<16x64xf32>) -> tensor<16x64xf32>
    %102 = linalg.matmul ins(%collapsed_38, %arg10 : tensor<16x16xf32>, tensor<16x64xf32>) outs(%101 : tensor<16x64xf32>) -> tensor<16x64xf32>
    %103 = linalg.generic {indexing_maps = [#map4, #map5], iterator_types = ["parallel", "parallel"]} ins(%arg11 : tensor<64xf32>) outs(%100 : tensor<16x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<16x64xf32>
    %104 = linalg.generic {indexing_maps = [#map5, #map5, #map5], iterator_types = ["parallel", "parallel"]} ins(%102, %103 : tensor<16x64xf32>, tensor<16x64xf32>) outs(%100 : tensor<16x64xf32>) {
    ^bb0(%in: f32, %in_49: f32, %out: f32):
      %163 = arith.addf %in, %in_49 : f32
      linalg.yield %163 : f32
    } -> tensor<16x64xf32>
    %expanded_39 = tensor.expand_shape %104 [[0, 1], [2]] output_shape [2, 8, 64] : tensor<16x64xf32> into tensor<2x8x64xf32>
    %105 = tensor.empty() : tensor<2x8x64xf32>
    %106 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded_39 : tensor<2x8x64xf32>) outs(%105 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %163 = arith.mulf %in, %cst_11 : f32
      linalg.yield %163 : f32
    } -> tensor<2x8x64xf32>
    %107 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded_39 : tensor<2x8x64xf32>) outs(%105 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %163 = math.fpowi %in, %c3_i64 : f32, i64
      linalg.yield %163 : f32
    } -> tensor<2x8x64xf32>
    %108 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%107 : tensor<2x8x64xf32>) outs(%105 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %163 = arith.truncf %cst_6 : f64 to f32
      %164 = arith.mulf %in, %163 : f32
      linalg.yield %164 : f32
    } -> tensor<2x8x64xf32>
    %109 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded_39, %108 : tensor<2x8x64xf32>, tensor<2x8x64xf32>) outs(%105 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32, %in_49: f32, %out: f32):
      %163 = arith.addf %in, %in_49 : f32
      linalg.yield %163 : f32
    } -> tensor<2x8x64xf32>
    %110 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%109 : tensor<2x8x64xf32>) outs(%105 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %163 = arith.truncf %cst_5 : f64 to f32
      %164 = arith.mulf %in, %163 : f32
      linalg.yield %164 : f32
    } -> tensor<2x8x64xf32>
    %111 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%110 : tensor<2x8x64xf32>) outs(%105 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %163 = math.tanh %in : f32
      linalg.yield %163 : f32
    } -> tensor<2x8x64xf32>
    %112 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%111 : tensor<2x8x64xf32>) outs(%105 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %163 = arith.addf %in, %cst_12 : f32
      linalg.yield %163 : f32
    } -> tensor<2x8x64xf32>
    %113 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%106, %112 : tensor<2x8x64xf32>, tensor<2x8x64xf32>) outs(%105 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32, %in_49: f32, %out: f32):
      %163 = arith.mulf %in, %in_49 : f32
      linalg.yield %163 : f32
    } -> tensor<2x8x64xf32>
    %collapsed_40 = tensor.collapse_shape %113 [[0, 1], [2]] : tensor<2x8x64xf32> into tensor<16x64xf32>
    %114 = linalg.matmul ins(%collapsed_40, %arg12 : tensor<16x64xf32>, tensor<64x16xf32>) outs(%79 : tensor<16x16xf32>) -> tensor<16x16xf32>
    %115 = linalg.generic {indexing_maps = [#map4, #map5], iterator_types = ["parallel", "parallel"]} ins(%arg13 : tensor<16xf32>) outs(%78 : tensor<16x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<16x16xf32>
    %116 = linalg.generic {indexing_maps = [#map5, #map5, #map5], iterator_types = ["parallel", "parallel"]} ins(%114, %115 : tensor<16x16xf32>, tensor<16x16xf32>) outs(%78 : tensor<16x16xf32>) {
    ^bb0(%in: f32, %in_49: f32, %out: f32):
      %163 = arith.addf %in, %in_49 : f32
      linalg.yield %163 : f32
    } -> tensor<16x16xf32>
    %expanded_41 = tensor.expand_shape %116 [[0, 1], [2]] output_shape [2, 8, 16] : tensor<16x16xf32> into tensor<2x8x16xf32>
    %117 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%83, %expanded_41 : tensor<2x8x16xf32>, tensor<2x8x16xf32>) outs(%0 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_49: f32, %out: f32):
      %163 = arith.addf %in, %in_49 : f32
      linalg.yield %163 : f32
    } -> tensor<2x8x16xf32>
    %118 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%117 : tensor<2x8x16xf32>) outs(%33 : tensor<2x8x16xf64>) {
    ^bb0(%in: f32, %out: f64):
      %163 = arith.extf %in : f32 to f64
      linalg.yield %163 : f64
    } -> tensor<2x8x16xf64>
    %119 = linalg.generic {indexing_maps = [#map1, #map13], iterator_types = ["parallel", "parallel", "reduction"]} ins(%118 : tensor<2x8x16xf64>) outs(%36 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %163 = arith.addf %in, %out : f64
      linalg.yield %163 : f64
    } -> tensor<2x8x1xf64>
    %120 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%119 : tensor<2x8x1xf64>) outs(%35 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %163 = arith.divf %in, %cst_9 : f64
      linalg.yield %163 : f64
    } -> tensor<2x8x1xf64>
    %121 = linalg.generic {indexing_maps = [#map1, #map13, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%118, %120 : tensor<2x8x16xf64>, tensor<2x8x1xf64>) outs(%33 : tensor<2x8x16xf64>) {
    ^bb0(%in: f64, %in_49: f64, %out: f64):
      %163 = arith.subf %in, %in_49 : f64
      linalg.yield %163 : f64
    } -> tensor<2x8x16xf64>
    %122 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%121, %121 : tensor<2x8x16xf64>, tensor<2x8x16xf64>) outs(%33 : tensor<2x8x16xf64>) {
    ^bb0(%in: f64, %in_49: f64, %out: f64):
      %163 = arith.mulf %in, %in_49 : f64
      linalg.yield %163 : f64
    } -> tensor<2x8x16xf64>
    %123 = linalg.generic {indexing_maps = [#map1, #map13], iterator_types = ["parallel", "parallel", "reduction"]} ins(%122 : tensor<2x8x16xf64>) outs(%36 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %163 = arith.addf %in, %out : f64
      linalg.yield %163 : f64
    } -> tensor<2x8x1xf64>
    %124 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%123 : tensor<2x8x1xf64>) outs(%35 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %163 = arith.divf %in, %cst_9 : f64
      linalg.yield %163 : f64
    } -> tensor<2x8x1xf64>
    %125 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%124 : tensor<2x8x1xf64>) outs(%43 : tensor<2x8x1xf32>) {
    ^bb0(%in: f64, %out: f32):
      %163 = arith.truncf %in : f64 to f32
      linalg.yield %163 : f32
    } -> tensor<2x8x1xf32>
    %126 = linalg.generic {indexing_maps = [#map1, #map13], iterator_types = ["parallel", "parallel", "reduction"]} ins(%117 : tensor<2x8x16xf32>) outs(%45 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %163 = arith.addf %in, %out : f32
      linalg.yield %163 : f32
    } -> tensor<2x8x1xf32>
    %127 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%126 : tensor<2x8x1xf32>) outs(%43 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %163 = arith.divf %in, %cst_10 : f32
      linalg.yield %163 : f32
    } -> tensor<2x8x1xf32>
    %128 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%125 : tensor<2x8x1xf32>) outs(%43 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %163 = arith.truncf %cst_8 : f64 to f32
      %164 = arith.addf %in, %163 : f32
      linalg.yield %164 : f32
    } -> tensor<2x8x1xf32>
    %129 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%128 : tensor<2x8x1xf32>) outs(%43 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %163 = math.rsqrt %in : f32
      linalg.yield %163 : f32
    } -> tensor<2x8x1xf32>
    %130 = linalg.generic {indexing_maps = [#map1, #map13, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%117, %127 : tensor<2x8x16xf32>, tensor<2x8x1xf32>) outs(%0 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_49: f32, %out: f32):
      %163 = arith.subf %in, %in_49 : f32
      linalg.yield %163 : f32
    } -> tensor<2x8x16xf32>
    %131 = linalg.generic {indexing_maps = [#map1, #map13, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%130, %129 : tensor<2x8x16xf32>, tensor<2x8x1xf32>) outs(%0 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_49: f32, %out: f32):
      %163 = arith.mulf %in, %in_49 : f32
      linalg.yield %163 : f32
    } -> tensor<2x8x16xf32>
    %132 = linalg.generic {indexing_maps = [#map1, #map14, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%131, %arg14 : tensor<2x8x16xf32>, tensor<16xf32>) outs(%0 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_49: f32, %out: f32):
      %163 = arith.mulf %in, %in_49 : f32
      linalg.yield %163 : f32
    } -> tensor<2x8x16xf32>
    %133 = linalg.generic {indexing_maps = [#map1, #map14, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%132, %arg15 : tensor<2x8x16xf32>, tensor<16xf32>) outs(%0 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_49: f32, %out: f32):
      %163 = arith.addf %in, %in_49 : f32
      linalg.yield %163 : f32
    } -> tensor<2x8x16xf32>
    %134 = tensor.empty() : tensor<16x32xf32>
    %transposed_42 = linalg.transpose ins(%arg0 : tensor<32x16xf32>) outs(%134 : tensor<16x32xf32>) permutation = [1, 0] 
    %collapsed_43 = tensor.collapse_shape %133 [[0, 1], [2]] : tensor<2x8x16xf32> into tensor<16x16xf32>
    %135 = linalg.fill ins(%cst_0 : f32) outs(%134 : tensor<16x32xf32>) -> tensor<16x32xf32>
    %136 = linalg.matmul ins(%collapsed_43, %transposed_42 : tensor<16x16xf32>, tensor<16x32xf32>) outs(%135 : tensor<16x32xf32>) -> tensor<16x32xf32>
    %padded = tensor.pad %arg16 low[0, 0] high[0, 1] {
    ^bb0(%arg17: index, %arg18: index):
      tensor.yield %c-100_i64 : i64
    } : tensor<2x8xi64> to tensor<2x9xi64>
    %extracted_slice_44 = tensor.extract_slice %padded[0, 1] [2, 8] [1, 1] : tensor<2x9xi64> to tensor<2x8xi64>
    %collapsed_45 = tensor.collapse_shape %extracted_slice_44 [[0, 1]] : tensor<2x8xi64> into tensor<16xi64>
    %137 = tensor.empty() : tensor<16xi64>
    %138 = linalg.fill ins(%c0_i64 : i64) outs(%137 : tensor<16xi64>) -> tensor<16xi64>
    %139 = tensor.empty() : tensor<16xf32>
    %140 = linalg.fill ins(%cst_1 : f32) outs(%139 : tensor<16xf32>) -> tensor<16xf32>
    %141:2 = linalg.generic {indexing_maps = [#map5, #map17, #map17], iterator_types = ["parallel", "reduction"]} ins(%136 : tensor<16x32xf32>) outs(%140, %138 : tensor<16xf32>, tensor<16xi64>) {
    ^bb0(%in: f32, %out: f32, %out_49: i64):
      %163 = linalg.index 1 : index
      %164 = arith.index_cast %163 : index to i64
      %165 = arith.maximumf %in, %out : f32
      %166 = arith.cmpf ogt, %in, %out : f32
      %167 = arith.select %166, %164, %out_49 : i64
      linalg.yield %165, %167 : f32, i64
    } -> (tensor<16xf32>, tensor<16xi64>)
    %expanded_46 = tensor.expand_shape %141#0 [[0, 1]] output_shape [16, 1] : tensor<16xf32> into tensor<16x1xf32>
    %142 = linalg.generic {indexing_maps = [#map5, #map18, #map5], iterator_types = ["parallel", "parallel"]} ins(%136, %expanded_46 : tensor<16x32xf32>, tensor<16x1xf32>) outs(%134 : tensor<16x32xf32>) {
    ^bb0(%in: f32, %in_49: f32, %out: f32):
      %163 = arith.subf %in, %in_49 : f32
      linalg.yield %163 : f32
    } -> tensor<16x32xf32>
    %143 = linalg.generic {indexing_maps = [#map5, #map5], iterator_types = ["parallel", "parallel"]} ins(%142 : tensor<16x32xf32>) outs(%134 : tensor<16x32xf32>) {
    ^bb0(%in: f32, %out: f32):
      %163 = math.exp %in : f32
      linalg.yield %163 : f32
    } -> tensor<16x32xf32>
    %144 = tensor.empty() : tensor<16x1xf32>
    %145 = linalg.fill ins(%cst_0 : f32) outs(%144 : tensor<16x1xf32>) -> tensor<16x1xf32>
    %146 = linalg.generic {indexing_maps = [#map5, #map18], iterator_types = ["parallel", "reduction"]} ins(%143 : tensor<16x32xf32>) outs(%145 : tensor<16x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %163 = arith.addf %in, %out : f32
      linalg.yield %163 : f32
    } -> tensor<16x1xf32>
    %147 = linalg.generic {indexing_maps = [#map5, #map5], iterator_types = ["parallel", "parallel"]} ins(%146 : tensor<16x1xf32>) outs(%144 : tensor<16x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %163 = math.log %in : f32
      linalg.yield %163 : f32
    } -> tensor<16x1xf32>
    %148 = linalg.generic {indexing_maps = [#map5, #map18, #map5], iterator_types = ["parallel", "parallel"]} ins(%142, %147 : tensor<16x32xf32>, tensor<16x1xf32>) outs(%134 : tensor<16x32xf32>) {
    ^bb0(%in: f32, %in_49: f32, %out: f32):
      %163 = arith.subf %in, %in_49 : f32
      linalg.yield %163 : f32
    } -> tensor<16x32xf32>
    %149 = tensor.empty() : tensor<16xi1>
    %150 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel"]} ins(%collapsed_45 : tensor<16xi64>) outs(%149 : tensor<16xi1>) {
    ^bb0(%in: i64, %out: i1):
      %163 = arith.cmpi ne, %in, %c-100_i64 : i64
      linalg.yield %163 : i1
    } -> tensor<16xi1>
    %151 = linalg.generic {indexing_maps = [#map2, #map2, #map19, #map2], iterator_types = ["parallel"]} ins(%150, %collapsed_45, %cst_13 : tensor<16xi1>, tensor<16xi64>, tensor<i64>) outs(%137 : tensor<16xi64>) {
    ^bb0(%in: i1, %in_49: i64, %in_50: i64, %out: i64):
      %163 = arith.select %in, %in_49, %in_50 : i64
      linalg.yield %163 : i64
    } -> tensor<16xi64>
    %expanded_47 = tensor.expand_shape %151 [[0, 1]] output_shape [16, 1] : tensor<16xi64> into tensor<16x1xi64>
    %152 = linalg.generic {indexing_maps = [#map5, #map5], iterator_types = ["parallel", "parallel"]} ins(%expanded_47 : tensor<16x1xi64>) outs(%145 : tensor<16x1xf32>) {
    ^bb0(%in: i64, %out: f32):
      %163 = linalg.index 0 : index
      %164 = arith.index_cast %in : i64 to index
      %165 = arith.cmpi slt, %164, %c32 : index
      cf.assert %165, "index must be smaller than dim size"
      %166 = arith.cmpi sge, %in, %c0_i64 : i64
      cf.assert %166, "index must be larger or equal to 0"
      %extracted = tensor.extract %148[%163, %164] : tensor<16x32xf32>
      linalg.yield %extracted : f32
    } -> tensor<16x1xf32>
    %collapsed_48 = tensor.collapse_shape %152 [[0, 1]] : tensor<16x1xf32> into tensor<16xf32>
    %153 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel"]} ins(%collapsed_48 : tensor<16xf32>) outs(%139 : tensor<16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %163 = arith.negf %in : f32
      linalg.yield %163 : f32
    } -> tensor<16xf32>
    %154 = linalg.generic {indexing_maps = [#map2, #map2, #map19, #map2], iterator_types = ["parallel"]} ins(%150, %153, %cst_3 : tensor<16xi1>, tensor<16xf32>, tensor<f32>) outs(%139 : tensor<16xf32>) {
    ^bb0(%in: i1, %in_49: f32, %in_50: f32, %out: f32):
      %163 = arith.select %in, %in_49, %in_50 : f32
      linalg.yield %163 : f32
    } -> tensor<16xf32>
    %155 = tensor.empty() : tensor<i64>
    %156 = linalg.fill ins(%c0_i64 : i64) outs(%155 : tensor<i64>) -> tensor<i64>
    %157 = linalg.generic {indexing_maps = [#map2, #map19], iterator_types = ["reduction"]} ins(%150 : tensor<16xi1>) outs(%156 : tensor<i64>) {
    ^bb0(%in: i1, %out: i64):
      %163 = arith.extui %in : i1 to i64
      %164 = arith.addi %163, %out : i64
      linalg.yield %164 : i64
    } -> tensor<i64>
    %158 = tensor.empty() : tensor<f32>
    %159 = linalg.generic {indexing_maps = [#map20, #map20], iterator_types = []} ins(%157 : tensor<i64>) outs(%158 : tensor<f32>) {
    ^bb0(%in: i64, %out: f32):
      %163 = arith.sitofp %in : i64 to f32
      linalg.yield %163 : f32
    } -> tensor<f32>
    %160 = linalg.fill ins(%cst_0 : f32) outs(%158 : tensor<f32>) -> tensor<f32>
    %161 = linalg.generic {indexing_maps = [#map2, #map19], iterator_types = ["reduction"]} ins(%154 : tensor<16xf32>) outs(%160 : tensor<f32>) {
    ^bb0(%in: f32, %out: f32):
      %163 = arith.addf %in, %out : f32
      linalg.yield %163 : f32
    } -> tensor<f32>
    %162 = linalg.generic {indexing_maps = [#map20, #map20, #map20], iterator_types = []} ins(%161, %159 : tensor<f32>, tensor<f32>) outs(%158 : tensor<f32>) {
    ^bb0(%in: f32, %in_49: f32, %out: f32):
      %163 = arith.divf %in, %in_49 : f32
      linalg.yield %163 : f32
    } -> tensor<f32>
    return %162 : tensor<f32>
  }
}
