/** zlink public API (API.md). Everything an application or a contract test uses is exported here. */
export {
  RelocationMode,
  FrameworkRuntimeState,
  RelocationOutcome,
  RelocationReason,
  TerminationOutcome,
  TerminationReason,
  nameOf,
  isValidRelocationResult,
  isValidTerminationResult,
} from '../vocabulary';
export type { RelocationOptions, RelocationResult, TerminationResult, RuntimeStatus } from '../vocabulary';
export { createRuntime, type FrameworkRuntime } from './host';
export type { RuntimeOptions, Timing } from './options';
export { consoleLogger, LOG_LEVEL_ENV, type Logger, type LogLevel, type LogFn, type ConsoleLoggerOptions } from './logger';
export {
  DEFAULT_TIMING,
  DEFAULT_RELOCATION_DEADLINE_MS,
  DEFAULT_SHUTDOWN_DEADLINE_MS,
  DEFAULT_IN_FLIGHT_PAYLOAD_BUDGET_BYTES,
} from './options';
export {
  RelocationArgumentError,
  ArgumentError,
  AbortError,
  AdmissionError,
  NodeIdInUseError,
  RequestError,
  RemoteHandlerError,
} from './errors';
export { MAX_VALUE_BYTES } from './codec';
export {
  defineActor,
  defineSpot,
  preserveState,
  recreateOnRelocation,
  disableRelocation,
  type ActorDefinition,
  type SpotDefinition,
  type RelocationPolicy,
  type ClosingReason,
  type ReadyCompletion,
  type TimerSpec,
  type ObjectDefinition,
} from './definitions';
export type {
  ObjectContext,
  SpotContext,
  ObjectRef,
  RequestOptions,
  TimerApi,
  RelocationReadyHandle,
  SessionHandle,
  SessionsApi,
  SessionEvent,
  SessionCloseReason,
  ChannelApi,
} from './context';
export type { SessionsOptions, SessionAuthenticate, SessionAuthRequest } from './components/sessions';
export type { FanoutPublisher, FanoutSubscription, FanoutHandler, FanoutEventInfo, SubscribeOptions } from './components/fanout/fanout';
export type { ChannelMemberRef, MulticastResult } from './components/multicast/multicast';
export type { RelocationDiagnostics } from './relocation/coordinator';
export type { CallOptions, ServeHandler, ServeInfo, ServeOptions, ServerRegistration } from './components/client-server';
export type { SpotRef } from './spot-close/spot-ref';
export { RELOCATION_CHANGED, TERMINATION_CHANGED, type HostEventName, type HostEventListener } from './status';
export { UNIT_CHANGED, type UnitEvent, type UnitPoint, type UnitListener } from './relocation/events';
export type { NodeInspectionEvent } from './inspection';
export { SimulatedClock, systemClock, type Clock } from './clock';
export { memoryStores, redisStores, REDIS_STORE_DEFAULTS, MEMORY_STORE_DEFAULTS, LeaseHeldError } from '../stores';
export type { RedisStoresOptions, RedisClusterNode, RedisClusterOptions, MemoryStoresOptions, MemoryStores } from '../stores';
export type { Stores, NodeRef, RequestTerminal, ChannelStore, ChannelMember } from '../stores/types';
export { StoreUnavailableError, DataLostError } from '../stores/types';
export type { MeshConfig, TransportFactory, TransportOptions, Transport } from '../transport/types';
