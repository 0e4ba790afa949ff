// One small function per op kind the differentiation library supports
// (include/pipeopt/Autodiff/Autodiff.h). Each is checked numerically against
// central finite differences by gradcheck-ops.test and its adjoint IR is
// shown by ../Transforms/differentiate-ops.mlir. Values are chosen so that
// no input sits at a kink (max ties, abs at 0) where finite differences and
// the documented subgradient differ.

#id1 = affine_map<(i) -> (i)>
#id2 = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#col = affine_map<(i, j) -> (j)>

// Element-wise arith/math in one body: add sub mul div neg exp log tanh
// erf sqrt rsqrt powf fpowi absf maximumf minimumf select sin cos.
func.func @elementwise(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %e = tensor.empty() : tensor<2x3xf32>
  %r = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : tensor<2x3xf32>, tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %two = arith.constant 2.0 : f32
    %c3 = arith.constant 3 : i32
    %s = arith.addf %x, %y : f32
    %d = arith.subf %x, %y : f32
    %m = arith.mulf %s, %d : f32
    %x2 = arith.mulf %x, %x : f32
    %pos = arith.addf %x2, %two : f32
    %q = arith.divf %m, %pos : f32
    %n = arith.negf %q : f32
    %ex = math.exp %n : f32
    %lg = math.log %pos : f32
    %th = math.tanh %y : f32
    %ef = math.erf %x : f32
    %sq = math.sqrt %pos : f32
    %rs = math.rsqrt %pos : f32
    %pw = math.powf %pos, %th : f32
    %pi = math.fpowi %y, %c3 : f32, i32
    %ab = math.absf %d : f32
    %mx = arith.maximumf %x, %y : f32
    %mn = arith.minimumf %ex, %lg : f32
    %c = arith.cmpf ogt, %x, %y : f32
    %sel = arith.select %c, %ef, %th : f32
    %sn = math.sin %x : f32
    %cs = math.cos %y : f32
    %t1 = arith.addf %ex, %lg : f32
    %t2 = arith.addf %t1, %sq : f32
    %t3 = arith.addf %t2, %rs : f32
    %t4 = arith.addf %t3, %pw : f32
    %t5 = arith.addf %t4, %pi : f32
    %t6 = arith.addf %t5, %ab : f32
    %t7 = arith.addf %t6, %mx : f32
    %t8 = arith.addf %t7, %mn : f32
    %t9 = arith.addf %t8, %sel : f32
    %t10 = arith.addf %t9, %sn : f32
    %t11 = arith.addf %t10, %cs : f32
    linalg.yield %t11 : f32
  } -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}

// Broadcast (a bias over rows) and a row-sum reduction.
func.func @broadcast_reduce(%x: tensor<4x3xf32>, %bias: tensor<3xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4x3xf32>
  %bb = linalg.broadcast ins(%bias : tensor<3xf32>) outs(%e : tensor<4x3xf32>) dimensions = [0]
  %s = linalg.add ins(%x, %bb : tensor<4x3xf32>, tensor<4x3xf32>) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
  %z = arith.constant 0.0 : f32
  %e4 = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
  %r = linalg.reduce ins(%s : tensor<4x3xf32>) outs(%f : tensor<4xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %sq = arith.mulf %in, %in : f32
      %a = arith.addf %acc, %sq : f32
      linalg.yield %a : f32
    }
  return %r : tensor<4xf32>
}

// Max reduction (softmax's max, max pooling) and a transpose.
func.func @max_transpose(%x: tensor<3x4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4x3xf32>
  %t = linalg.transpose ins(%x : tensor<3x4xf32>) outs(%e : tensor<4x3xf32>) permutation = [1, 0]
  %ninf = arith.constant 0xFF800000 : f32
  %e4 = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
  %r = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%t : tensor<4x3xf32>) outs(%f : tensor<4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %m = arith.maximumf %in, %acc : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// Contractions: matmul, batch_matmul, a transposed operand (generic), matvec.
func.func @contractions(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>, %c: tensor<2x3x4xf32>, %d: tensor<2x4x5xf32>, %v: tensor<4xf32>) -> tensor<2x4xf32> {
  %z = arith.constant 0.0 : f32
  %e24 = tensor.empty() : tensor<2x4xf32>
  %f24 = linalg.fill ins(%z : f32) outs(%e24 : tensor<2x4xf32>) -> tensor<2x4xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<2x3xf32>, tensor<3x4xf32>) outs(%f24 : tensor<2x4xf32>) -> tensor<2x4xf32>
  %e235 = tensor.empty() : tensor<2x3x5xf32>
  %f235 = linalg.fill ins(%z : f32) outs(%e235 : tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %bmm = linalg.batch_matmul ins(%c, %d : tensor<2x3x4xf32>, tensor<2x4x5xf32>) outs(%f235 : tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  // a^T-style contraction written as a generic: t[i, j] = sum_k bmm[i, k, 0] * b[k, j]
  %tr = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k, 0)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (i, j)>],
                        iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%bmm, %b : tensor<2x3x5xf32>, tensor<3x4xf32>) outs(%mm : tensor<2x4xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x4xf32>
  %e2 = tensor.empty() : tensor<2xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<2xf32>) -> tensor<2xf32>
  %mv = linalg.matvec ins(%tr, %v : tensor<2x4xf32>, tensor<4xf32>) outs(%f2 : tensor<2xf32>) -> tensor<2xf32>
  %r = linalg.generic {indexing_maps = [#id2, #row, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%tr, %mv : tensor<2x4xf32>, tensor<2xf32>) outs(%e24 : tensor<2x4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    linalg.yield %p : f32
  } -> tensor<2x4xf32>
  return %r : tensor<2x4xf32>
}

// Convolutions with stride, dilation and padding; depthwise; pooling.
func.func @convolutions(%x: tensor<1x2x7x7xf32>, %w: tensor<3x2x3x3xf32>, %xh: tensor<1x6x6x2xf32>, %wh: tensor<2x2x2x3xf32>, %dw: tensor<3x3x2xf32>) -> tensor<1x3x2x2xf32> {
  %z = arith.constant 0.0 : f32
  %pad = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %z : f32
  } : tensor<1x2x7x7xf32> to tensor<1x2x9x9xf32>
  %e = tensor.empty() : tensor<1x3x4x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%pad, %w : tensor<1x2x9x9xf32>, tensor<3x2x3x3xf32>) outs(%f : tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  %eh = tensor.empty() : tensor<1x4x4x3xf32>
  %fh = linalg.fill ins(%z : f32) outs(%eh : tensor<1x4x4x3xf32>) -> tensor<1x4x4x3xf32>
  %ch = linalg.conv_2d_nhwc_hwcf {dilations = dense<2> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%xh, %wh : tensor<1x6x6x2xf32>, tensor<2x2x2x3xf32>) outs(%fh : tensor<1x4x4x3xf32>) -> tensor<1x4x4x3xf32>
  %ed = tensor.empty() : tensor<1x4x4x2xf32>
  %fd = linalg.fill ins(%z : f32) outs(%ed : tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  %cd = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%xh, %dw : tensor<1x6x6x2xf32>, tensor<3x3x2xf32>) outs(%fd : tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  // NHWC -> NCHW and combine the three.
  %et = tensor.empty() : tensor<1x3x4x4xf32>
  %cht = linalg.transpose ins(%ch : tensor<1x4x4x3xf32>) outs(%et : tensor<1x3x4x4xf32>) permutation = [0, 3, 1, 2]
  %sum = linalg.add ins(%c, %cht : tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>) outs(%e : tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  %ninf = arith.constant 0xFF800000 : f32
  %win = tensor.empty() : tensor<2x2xf32>
  %ep = tensor.empty() : tensor<1x3x2x2xf32>
  %fp = linalg.fill ins(%ninf : f32) outs(%ep : tensor<1x3x2x2xf32>) -> tensor<1x3x2x2xf32>
  %mp = linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%sum, %win : tensor<1x3x4x4xf32>, tensor<2x2xf32>) outs(%fp : tensor<1x3x2x2xf32>) -> tensor<1x3x2x2xf32>
  %eq = tensor.empty() : tensor<1x2x2x2xf32>
  %fq = linalg.fill ins(%z : f32) outs(%eq : tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %sp = linalg.pooling_nhwc_sum {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%cd, %win : tensor<1x4x4x2xf32>, tensor<2x2xf32>) outs(%fq : tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %spc = tensor.collapse_shape %sp [[0, 1, 2], [3]] : tensor<1x2x2x2xf32> into tensor<4x2xf32>
  %mpc = tensor.collapse_shape %mp [[0, 1], [2, 3]] : tensor<1x3x2x2xf32> into tensor<3x4xf32>
  %e34 = tensor.empty() : tensor<3x4xf32>
  %r = linalg.generic {indexing_maps = [#id2, affine_map<(i, j) -> (j, 0)>, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%mpc, %spc : tensor<3x4xf32>, tensor<4x2xf32>) outs(%e34 : tensor<3x4xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %m, %p : f32
    linalg.yield %s : f32
  } -> tensor<3x4xf32>
  %out = tensor.expand_shape %r [[0, 1], [2, 3]] output_shape [1, 3, 2, 2] : tensor<3x4xf32> into tensor<1x3x2x2xf32>
  return %out : tensor<1x3x2x2xf32>
}

// Data movement: expand/collapse_shape, extract_slice, insert_slice,
// concat, cast.
func.func @data_movement(%x: tensor<4x6xf32>, %y: tensor<2x6xf32>) -> tensor<3x2x6xf32> {
  %a = tensor.extract_slice %x[1, 0] [2, 6] [1, 1] : tensor<4x6xf32> to tensor<2x6xf32>
  %b = tensor.extract_slice %x[0, 1] [4, 1] [1, 2] : tensor<4x6xf32> to tensor<4xf32>
  %ins = tensor.insert_slice %y into %x[2, 0] [2, 6] [1, 1] : tensor<2x6xf32> into tensor<4x6xf32>
  %cat = tensor.concat dim(0) %a, %ins : (tensor<2x6xf32>, tensor<4x6xf32>) -> tensor<6x6xf32>
  %c = tensor.cast %cat : tensor<6x6xf32> to tensor<?x6xf32>
  %c2 = tensor.cast %c : tensor<?x6xf32> to tensor<6x6xf32>
  %e = tensor.expand_shape %c2 [[0, 1], [2]] output_shape [3, 2, 6] : tensor<6x6xf32> into tensor<3x2x6xf32>
  %bb = tensor.expand_shape %b [[0, 1]] output_shape [2, 2] : tensor<4xf32> into tensor<2x2xf32>
  %empty = tensor.empty() : tensor<3x2x6xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, j, k)>, affine_map<(i, j, k) -> (j, 1)>, affine_map<(i, j, k) -> (i, j, k)>],
                       iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%e, %bb : tensor<3x2x6xf32>, tensor<2x2xf32>) outs(%empty : tensor<3x2x6xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %m = arith.mulf %p, %q : f32
    linalg.yield %m : f32
  } -> tensor<3x2x6xf32>
  return %r : tensor<3x2x6xf32>
}

// Gather (an embedding lookup): the table is read with tensor.extract in
// the body; the ids are integers and get no gradient.
func.func @gather(%table: tensor<5x3xf32>, %ids: tensor<4xi64>) -> tensor<4x3xf32> {
  %e = tensor.empty() : tensor<4x3xf32>
  %r = linalg.generic {indexing_maps = [#row, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<4xi64>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%id: i64, %o: f32):
    %i = arith.index_cast %id : i64 to index
    %j = linalg.index 1 : index
    %v = tensor.extract %table[%i, %j] : tensor<5x3xf32>
    %sq = arith.mulf %v, %v : f32
    linalg.yield %sq : f32
  } -> tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}

// Mixed precision: f32 values computed in f64 (as torch-mlir's LayerNorm
// statistics), truncated back.
func.func @mixed_precision(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%in: f32, %o: f32):
    %d = arith.extf %in : f32 to f64
    %s = arith.mulf %d, %d : f64
    %t = arith.truncf %s : f64 to f32
    %u = arith.mulf %t, %in : f32
    linalg.yield %u : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// A model that is its own loss: returns one scalar.
func.func @scalar_loss(%x: tensor<3xf32>, %w: tensor<3xf32>) -> tensor<f32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %r = linalg.dot ins(%x, %w : tensor<3xf32>, tensor<3xf32>) outs(%f : tensor<f32>) -> tensor<f32>
  return %r : tensor<f32>
}
