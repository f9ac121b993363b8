#loc1 = loc("x")
#loc3 = loc("reduce_window_max")
#loc6 = loc("reduce_window_max:"(#loc3))
module @jit__max_pool attributes {jax.uses_shape_polymorphism = false, mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x8x8xf32> loc("x")) -> (tensor<2x4x4xf32> {jax.result_info = "result"}) {
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32> loc(#loc8)
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<f32> loc(#loc8)
    %1 = "stablehlo.reduce_window"(%arg0, %0) <{window_dimensions = array<i64: 1, 2, 2>, window_strides = array<i64: 1, 2, 2>}> ({
    ^bb0(%arg1: tensor<f32> loc("reduce_window_max:"(#loc3)), %arg2: tensor<f32> loc("reduce_window_max:"(#loc3))):
      %2 = stablehlo.maximum %arg1, %arg2 : tensor<f32> loc(#loc8)
      stablehlo.return %2 : tensor<f32> loc(#loc8)
    }) : (tensor<2x8x8xf32>, tensor<f32>) -> tensor<2x4x4xf32> loc(#loc8)
    return %1 : tensor<2x4x4xf32> loc(#loc7)
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
#loc2 = loc("_tpu.py":262:9)
#loc4 = loc("<frozen runpy>":88:4)
#loc5 = loc("jit(_max_pool)"(#loc2))
#loc7 = loc("jit(_max_pool)"(#loc4))
#loc8 = loc("reduce_window_max"(#loc5))
