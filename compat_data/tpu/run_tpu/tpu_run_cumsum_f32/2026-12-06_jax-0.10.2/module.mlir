#loc = loc(unknown)
#loc1 = loc("x")
#loc3 = loc("_tpu.py":252:32)
#loc5 = loc("reduce_window_sum")
#loc6 = loc("reduce_window_max")
#loc8 = loc("jit(_cumsum)"(#loc3))
#loc11 = loc("reduce_window_sum:"(#loc5))
#loc13 = loc("reduce_window_max:"(#loc6))
module @jit__cumsum attributes {jax.uses_shape_polymorphism = false, mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<16x16xf32> loc("x")) -> (tensor<16x16xf32> {jax.result_info = "result[0]"}, tensor<16x16xf32> {jax.result_info = "result[1]"}) {
    %0 = call @cumsum(%arg0) : (tensor<16x16xf32>) -> tensor<16x16xf32> loc(#loc7)
    %1 = call @cummax(%arg0) : (tensor<16x16xf32>) -> tensor<16x16xf32> loc(#loc8)
    return %0, %1 : tensor<16x16xf32>, tensor<16x16xf32> loc(#loc9)
  } loc(#loc)
  func.func private @cumsum(%arg0: tensor<16x16xf32> loc(unknown)) -> tensor<16x16xf32> {
    %0 = call @cumsum_0(%arg0) : (tensor<16x16xf32>) -> tensor<16x16xf32> loc(#loc)
    return %0 : tensor<16x16xf32> loc(#loc)
  } loc(#loc14)
  func.func private @cumsum_0(%arg0: tensor<16x16xf32> loc(unknown)) -> tensor<16x16xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32> loc(#loc5)
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<f32> loc(#loc5)
    %1 = "stablehlo.reduce_window"(%arg0, %0) <{padding = dense<[[15, 0], [0, 0]]> : tensor<2x2xi64>, window_dimensions = array<i64: 16, 1>}> ({
    ^bb0(%arg1: tensor<f32> loc("reduce_window_sum:"(#loc5)), %arg2: tensor<f32> loc("reduce_window_sum:"(#loc5))):
      %2 = stablehlo.add %arg1, %arg2 : tensor<f32> loc(#loc5)
      stablehlo.return %2 : tensor<f32> loc(#loc5)
    }) : (tensor<16x16xf32>, tensor<f32>) -> tensor<16x16xf32> loc(#loc5)
    return %1 : tensor<16x16xf32> loc(#loc)
  } loc(#loc)
  func.func private @cummax(%arg0: tensor<16x16xf32> loc("jit(_cumsum)"(#loc3))) -> tensor<16x16xf32> {
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32> loc(#loc12)
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<f32> loc(#loc12)
    %1 = "stablehlo.reduce_window"(%arg0, %0) <{padding = dense<[[0, 0], [15, 0]]> : tensor<2x2xi64>, window_dimensions = array<i64: 1, 16>}> ({
    ^bb0(%arg1: tensor<f32> loc("reduce_window_max:"(#loc6)), %arg2: tensor<f32> loc("reduce_window_max:"(#loc6))):
      %2 = stablehlo.maximum %arg1, %arg2 : tensor<f32> loc(#loc12)
      stablehlo.return %2 : tensor<f32> loc(#loc12)
    }) : (tensor<16x16xf32>, tensor<f32>) -> tensor<16x16xf32> loc(#loc12)
    return %1 : tensor<16x16xf32> loc(#loc8)
  } loc(#loc8)
} loc(#loc)
#loc2 = loc("_tpu.py":252:9)
#loc4 = loc("<frozen runpy>":88:4)
#loc7 = loc("jit(_cumsum)/jit(cumsum)"(#loc2))
#loc9 = loc("jit(_cumsum)"(#loc4))
#loc10 = loc("jit(_cumsum)/jit"(#loc2))
#loc12 = loc("reduce_window_max"(#loc3))
#loc14 = loc("jit:"(#loc10))
