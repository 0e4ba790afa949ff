//===- MachineInternal.h - Helpers shared by Machine.cpp and MachineJSON.cpp
//===//
//
// Part of pipeopt. Not installed.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_LIB_MACHINE_MACHINEINTERNAL_H
#define PIPEOPT_LIB_MACHINE_MACHINEINTERNAL_H

#include <string>

namespace pipeopt {
namespace machine {
namespace detail {

/// `v` for messages, as printf's %g ("1e+308", "-1", "inf", "0.5").
std::string formatNumber(double v);

} // namespace detail
} // namespace machine
} // namespace pipeopt

#endif // PIPEOPT_LIB_MACHINE_MACHINEINTERNAL_H
