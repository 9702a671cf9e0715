/**
 * The target's owner commits of one step travel together (DESIGN "Relocation at scale": one coalesced commit per
 * pipeline tick — a Lua CAS per key tops out near 30k/s here, one script over 128 keys reached 120k keys/s), as one
 * `commitOwners` call per 128 objects: one guarded write and one op record per call, not per object (Redis kept
 * ~470 bytes per object for the op TTL, issue [6/10]). Each unit still gets its own result, or the error of the call
 * that carried it, so per-unit semantics stay: every unit retries on store errors until its restore validity ends,
 * or fails alone (§11). A retry goes in a later call under a new opId; the store answers an entry it committed
 * before `applied` again (OwnerCommitRequest), so a commit whose reply was lost is not taken for a conflict.
 *
 * `submit` takes the entries of many units with one callback (an inbound parcel commits its units together), so a
 * 10k-unit move does not make 10k promises; `commit` is the one-entry form.
 */
import { randomUUID } from 'node:crypto';
import type { CasResult, LocationStore, NodeRef, OwnerCommitEntry } from '../../stores/types';

/** Objects per store call: the Redis store runs one script per call (per hash slot on a cluster). */
export const COMMIT_BATCH_MAX = 128;

/** Per entry: its result, or the error of the store call that carried it. */
export type CommitOutcome = CasResult | { readonly error: unknown };

interface Submission {
  readonly outcomes: CommitOutcome[];
  remaining: number;
  readonly done: (outcomes: CommitOutcome[]) => void;
}

export class OwnerCommitBatcher {
  /** This tick's queue, flattened: entry i came from `owners[i]`, where it is number `indexes[i]`. */
  private entries: OwnerCommitEntry[] = [];
  private owners: Submission[] = [];
  private indexes: number[] = [];
  private scheduled = false;

  /** `owner`: this node (read at each call: a host knows its lifecycle generation once started). */
  constructor(
    private readonly location: Pick<LocationStore, 'commitOwners'>,
    private readonly owner: () => NodeRef,
    private readonly maxBatch = COMMIT_BATCH_MAX,
  ) {}

  commit(entry: OwnerCommitEntry): Promise<CasResult> {
    return new Promise((resolve, reject) =>
      this.submit([entry], ([outcome]) => ('error' in outcome! ? reject(outcome.error) : resolve(outcome!))),
    );
  }

  /** `done` is called once, with one outcome per entry in order. */
  submit(entries: readonly OwnerCommitEntry[], done: (outcomes: CommitOutcome[]) => void): void {
    if (entries.length === 0) return done([]);
    const submission: Submission = { outcomes: new Array(entries.length), remaining: entries.length, done };
    for (let index = 0; index < entries.length; index++) {
      this.entries.push(entries[index]!);
      this.owners.push(submission);
      this.indexes.push(index);
    }
    // A microtask: the cutovers of one socket read (several frames) still go together, and their commit is on its way
    // before the parcels read with them are restored (the target takes those in a turn later, Inbound.onPayload).
    // `npm run bench -- --n 100000`, parcels of 32 units, target CAS − S1 p99: 59–67 ms with the CAS at the end of the
    // turn and parcels restored at once; 55–57 with it here; 36–44 with it here and the intake deferred.
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(() => this.flush());
  }

  private flush(): void {
    this.scheduled = false;
    const { entries, owners, indexes } = this;
    this.entries = [];
    this.owners = [];
    this.indexes = [];
    for (let start = 0; start < entries.length; start += this.maxBatch) {
      const end = Math.min(entries.length, start + this.maxBatch);
      const settle = (outcome: (j: number) => CommitOutcome) => {
        for (let i = start; i < end; i++) {
          const submission = owners[i]!;
          submission.outcomes[indexes[i]!] = outcome(i - start);
          if (--submission.remaining === 0) submission.done(submission.outcomes);
        }
      };
      this.location
        .commitOwners({
          opId: `commit:${randomUUID()}`,
          owner: this.owner(),
          entries: start === 0 && end === entries.length ? entries : entries.slice(start, end),
        })
        .then(
          (results) => settle((j) => results[j]!),
          (error: unknown) => settle(() => ({ error })),
        );
    }
  }
}
