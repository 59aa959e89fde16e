// dlbridge: the whole C++ API.
#pragma once

#include "dlbridge/host_copy.hpp"
#include "dlbridge/convert.hpp"
#include "dlbridge/device.hpp"
#include "dlbridge/dispatch.hpp"
#include "dlbridge/dlpack.hpp"
#include "dlbridge/dtype.hpp"
#include "dlbridge/element.hpp"
#include "dlbridge/layout.hpp"
#include "dlbridge/plan.hpp"
#include "dlbridge/shape.hpp"
#include "dlbridge/small_float.hpp"
#include "dlbridge/stream.hpp"
#include "dlbridge/tensor.hpp"
#include "dlbridge/validate.hpp"
#include "dlbridge/version.hpp"
#include "dlbridge/view.hpp"
