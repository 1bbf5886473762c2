/** @file
 * Weft — the whole user API in one include. */
#ifndef WEFT_WEFT_H_
#define WEFT_WEFT_H_

#include "weft/control.h"
#include "weft/dataset.h"
#include "weft/device.h"
#include "weft/dtype.h"
#include "weft/graph.h"
#include "weft/model.h"
#include "weft/ops.h"
#include "weft/session.h"
#include "weft/status.h"
#include "weft/summary.h"
#include "weft/tensor.h"
#include "weft/train.h"
#include "weft/version.h"

#endif /* WEFT_WEFT_H_ */
