/**
 * The target's owner CASes of one step travel together (DESIGN "Relocation at scale": one coalesced `casMany` per
 * pipeline tick — a Lua CAS per key tops out near 30k/s here, one script over 128 keys reached 120k keys/s). Each
 * unit still gets its own result, or the error of the call that carried it, so per-unit semantics stay: every
 * unit retries on store errors until its restore validity ends, or fails alone (§11).
 *
 * `submit` takes the requests of many units with one callback (an inbound parcel commits its units together), so
 * a 10k-unit move does not make 10k promises; `cas` is the one-request form.
 */
import type { CasRequest, CasResult, LocationStore } from '../../stores/types';

/** Keys per store call: the Redis store runs one script per call (per hash slot on a cluster). */
export const CAS_BATCH_MAX = 128;

/** Per request: its result, or the error of the store call that carried it. */
export type CasOutcome = CasResult | { readonly error: unknown };

interface Submission {
  readonly requests: readonly CasRequest[];
  readonly outcomes: CasOutcome[];
  remaining: number;
  readonly done: (outcomes: CasOutcome[]) => void;
}

export class CasBatcher {
  /** This tick's queue, flattened: request i came from `owners[i]`, where it is number `indexes[i]`. */
  private requests: CasRequest[] = [];
  private owners: Submission[] = [];
  private indexes: number[] = [];
  private scheduled = false;

  constructor(
    private readonly location: Pick<LocationStore, 'casMany'>,
    private readonly maxBatch = CAS_BATCH_MAX,
  ) {}

  cas(request: CasRequest): Promise<CasResult> {
    return new Promise((resolve, reject) =>
      this.submit([request], ([outcome]) => ('error' in outcome! ? reject(outcome.error) : resolve(outcome!))),
    );
  }

  /** `done` is called once, with one outcome per request in order. */
  submit(requests: readonly CasRequest[], done: (outcomes: CasOutcome[]) => void): void {
    if (requests.length === 0) return done([]);
    const submission: Submission = { requests, outcomes: new Array(requests.length), remaining: requests.length, done };
    for (let index = 0; index < requests.length; index++) {
      this.requests.push(requests[index]!);
      this.owners.push(submission);
      this.indexes.push(index);
    }
    // A microtask: the cutovers of one socket read (several frames) still go together, and their CAS is on its way
    // before the parcels read with them are restored (the target takes those in a turn later, Inbound.onPayload).
    // `npm run bench -- --n 100000`, parcels of 32 units, target CAS − S1 p99: 59–67 ms with the CAS at the end of the
    // turn and parcels restored at once; 55–57 with it here; 36–44 with it here and the intake deferred.
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(() => this.flush());
  }

  private flush(): void {
    this.scheduled = false;
    const { requests, owners, indexes } = this;
    this.requests = [];
    this.owners = [];
    this.indexes = [];
    for (let start = 0; start < requests.length; start += this.maxBatch) {
      const end = Math.min(requests.length, start + this.maxBatch);
      const settle = (outcome: (j: number) => CasOutcome) => {
        for (let i = start; i < end; i++) {
          const submission = owners[i]!;
          submission.outcomes[indexes[i]!] = outcome(i - start);
          if (--submission.remaining === 0) submission.done(submission.outcomes);
        }
      };
      this.location.casMany(start === 0 && end === requests.length ? requests : requests.slice(start, end)).then(
        (results) => settle((j) => results[j]!),
        (error: unknown) => settle(() => ({ error })),
      );
    }
  }
}
