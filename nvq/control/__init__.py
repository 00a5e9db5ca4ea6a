"""The CLI ⇄ daemon protocol on `$NVQ_HOME/daemon.sock`: requests, frames and the typed
replies. Everything is re-exported here so callers keep writing `c.Submit`,
`c.JobDetail`."""

from __future__ import annotations

from nvq.control.frames import (
    Chunk as Chunk,
)
from nvq.control.frames import (
    Done as Done,
)
from nvq.control.frames import (
    Reply as Reply,
)
from nvq.control.frames import (
    encoder as encoder,
)
from nvq.control.frames import (
    event_batch_decoder as event_batch_decoder,
)
from nvq.control.frames import (
    reply_decoder as reply_decoder,
)
from nvq.control.frames import (
    request_decoder as request_decoder,
)
from nvq.control.replies import (
    UNSET as UNSET,
)
from nvq.control.replies import (
    Alert as Alert,
)
from nvq.control.replies import (
    ArraySubmitted as ArraySubmitted,
)
from nvq.control.replies import (
    ArraySummary as ArraySummary,
)
from nvq.control.replies import (
    ArtifactFile as ArtifactFile,
)
from nvq.control.replies import (
    Artifacts as Artifacts,
)
from nvq.control.replies import (
    ArtifactSync as ArtifactSync,
)
from nvq.control.replies import (
    BackupMade as BackupMade,
)
from nvq.control.replies import (
    Bootstrapped as Bootstrapped,
)
from nvq.control.replies import (
    BusyAssignment as BusyAssignment,
)
from nvq.control.replies import (
    BusyView as BusyView,
)
from nvq.control.replies import (
    ChannelHealth as ChannelHealth,
)
from nvq.control.replies import (
    ClusterPilot as ClusterPilot,
)
from nvq.control.replies import (
    ClusterView as ClusterView,
)
from nvq.control.replies import (
    DaemonInfo as DaemonInfo,
)
from nvq.control.replies import (
    DaemonStopping as DaemonStopping,
)
from nvq.control.replies import (
    GcDone as GcDone,
)
from nvq.control.replies import (
    GpuPoint as GpuPoint,
)
from nvq.control.replies import (
    JobDetail as JobDetail,
)
from nvq.control.replies import (
    JobPage as JobPage,
)
from nvq.control.replies import (
    JobRow as JobRow,
)
from nvq.control.replies import (
    LaneDetail as LaneDetail,
)
from nvq.control.replies import (
    LaneStatus as LaneStatus,
)
from nvq.control.replies import (
    Moved as Moved,
)
from nvq.control.replies import (
    NodeCheck as NodeCheck,
)
from nvq.control.replies import (
    NodeLeft as NodeLeft,
)
from nvq.control.replies import (
    NodesStopped as NodesStopped,
)
from nvq.control.replies import (
    Pong as Pong,
)
from nvq.control.replies import (
    Pulled as Pulled,
)
from nvq.control.replies import (
    Purged as Purged,
)
from nvq.control.replies import (
    QueueStatus as QueueStatus,
)
from nvq.control.replies import (
    Requeued as Requeued,
)
from nvq.control.replies import (
    StoreCheck as StoreCheck,
)
from nvq.control.replies import (
    Submitted as Submitted,
)
from nvq.control.replies import (
    Unset as Unset,
)
from nvq.control.replies import (
    WaitResult as WaitResult,
)
from nvq.control.replies import (
    WhyReport as WhyReport,
)
from nvq.control.requests import (
    Ack as Ack,
)
from nvq.control.requests import (
    Alerts as Alerts,
)
from nvq.control.requests import (
    Backup as Backup,
)
from nvq.control.requests import (
    Bootstrap as Bootstrap,
)
from nvq.control.requests import (
    BusyAssign as BusyAssign,
)
from nvq.control.requests import (
    BusyMode as BusyMode,
)
from nvq.control.requests import (
    Cancel as Cancel,
)
from nvq.control.requests import (
    Check as Check,
)
from nvq.control.requests import (
    ClusterDrain as ClusterDrain,
)
from nvq.control.requests import (
    ClusterRetry as ClusterRetry,
)
from nvq.control.requests import (
    ClusterScale as ClusterScale,
)
from nvq.control.requests import (
    ClusterStatus as ClusterStatus,
)
from nvq.control.requests import (
    Edit as Edit,
)
from nvq.control.requests import (
    EditJob as EditJob,
)
from nvq.control.requests import (
    Events as Events,
)
from nvq.control.requests import (
    Gc as Gc,
)
from nvq.control.requests import (
    GpuHistory as GpuHistory,
)
from nvq.control.requests import (
    JobArtifacts as JobArtifacts,
)
from nvq.control.requests import (
    JobWindow as JobWindow,
)
from nvq.control.requests import (
    Lane as Lane,
)
from nvq.control.requests import (
    Lanes as Lanes,
)
from nvq.control.requests import (
    ListJobs as ListJobs,
)
from nvq.control.requests import (
    Logs as Logs,
)
from nvq.control.requests import (
    Move as Move,
)
from nvq.control.requests import (
    NodeFlag as NodeFlag,
)
from nvq.control.requests import (
    Nodes as Nodes,
)
from nvq.control.requests import (
    NodeStop as NodeStop,
)
from nvq.control.requests import (
    Note as Note,
)
from nvq.control.requests import (
    Pause as Pause,
)
from nvq.control.requests import (
    Ping as Ping,
)
from nvq.control.requests import (
    Priority as Priority,
)
from nvq.control.requests import (
    Pull as Pull,
)
from nvq.control.requests import (
    Purge as Purge,
)
from nvq.control.requests import (
    Release as Release,
)
from nvq.control.requests import (
    Request as Request,
)
from nvq.control.requests import (
    Requeue as Requeue,
)
from nvq.control.requests import (
    Result as Result,
)
from nvq.control.requests import (
    Resume as Resume,
)
from nvq.control.requests import (
    ShowJob as ShowJob,
)
from nvq.control.requests import (
    Status as Status,
)
from nvq.control.requests import (
    StopDaemon as StopDaemon,
)
from nvq.control.requests import (
    Submit as Submit,
)
from nvq.control.requests import (
    Subscribe as Subscribe,
)
from nvq.control.requests import (
    Wait as Wait,
)
from nvq.control.requests import (
    Why as Why,
)
from nvq.control.terminal import (
    Exec as Exec,
)
from nvq.control.terminal import (
    Forward as Forward,
)
from nvq.control.terminal import (
    Progress as Progress,
)
from nvq.control.terminal import (
    Shell as Shell,
)
from nvq.control.terminal import (
    TermInput as TermInput,
)
from nvq.control.terminal import (
    TermSize as TermSize,
)
from nvq.control.terminal import (
    term_frame_decoder as term_frame_decoder,
)
