/* softmax_kernels.c: the one compilation of the softmax / log_softmax kernels
 * (reduction/softmax_drv.h) for float32 and float64, called by softmax.c and softmax_ext.c
 * through the declarations in softmax_common.h. No operator is registered here. */
#include "activation/softmax_common.h"

#define RT float
#define RSUF f32
#include "reduction/softmax_drv.h"
#define RT double
#define RSUF f64
#include "reduction/softmax_drv.h"
