// Package watchpipe is the one watch pipeline of the SDK: the drop-in
// lister.ListerWatcher and reflector.New both feed every watch event through
// it and act on its verdicts. It holds, once:
//
//   - the streaming-list guard (AwaitInitialEvents, GuardOptions, OpenWatch,
//     ExpectInitialEvents): a streaming list never hangs;
//   - the stall detector (Stall, StallCheckInterval, StartWatchdog): a watch
//     that delivers nothing for the stall timeout is ended;
//   - the never-older filter (Pipeline, Watch): no event older than the
//     object already delivered, than its deletion, or than the snapshot the
//     watch started from; no resourceVersion that does not parse on a server
//     whose versions do; the newest resourceVersion delivered;
//   - the client-side filter stage (Filter, FilterEvent), which a
//     ListerWatcher decorator hands to the pipeline (FilterSource:
//     shard.Wrap's hash range).
//
// It is not the place for the KEP-2523 decision table (internal/engine) nor
// for how an adopter relists (each adopter turns a verdict into its own
// action: an error event client-go understands, or a reflector state).
package watchpipe
