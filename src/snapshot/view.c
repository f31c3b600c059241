#include "snapshot/view.h"

const char *snapshot_phase_name(enum snapshot_phase p)
{
    switch (p) {
    case SNAPSHOT_PHASE_IN_PROGRESS:
        return "InProgress";
    case SNAPSHOT_PHASE_READY:
        return "Ready";
    case SNAPSHOT_PHASE_FAILED:
        return "Failed";
    case SNAPSHOT_PHASE_NONE:
        break;
    }
    return "";
}
