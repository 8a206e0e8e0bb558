import type { App, EdgeDeps } from "../types.ts";
import health from "./health.ts";
import openapi from "./openapi.ts";
import apiKeysList from "./api-keys.list.ts";
import apiKeysCreate from "./api-keys.create.ts";
import apiKeysUpdate from "./api-keys.update.ts";
import apiKeysDelete from "./api-keys.delete.ts";
import usageExport from "./usage.export.ts";
import usageList from "./usage.list.ts";
import usageSummary from "./usage.summary.ts";
import accountGet from "./account.get.ts";
import accountBalance from "./account.balance.ts";
import modelsList from "./models.list.ts";
import modelsStats from "./models.stats.ts";
import modelsRecommended from "./models.recommended.ts";
import modelsCategories from "./models.categories.ts";
import modelsGet from "./models.get.ts";
import ocr from "./ocr.ts";
import jobsCreate from "./jobs.create.ts";
import jobsGet from "./jobs.get.ts";
import jobsList from "./jobs.list.ts";
import jobsPages from "./jobs.pages.ts";
import jobsResult from "./jobs.result.ts";
import jobsEvents from "./jobs.events.ts";
import jobsCancel from "./jobs.cancel.ts";
import chatCompletions from "./chat.completions.ts";
import convert from "./convert.ts";
import convertEstimate from "./convert.estimate.ts";
import convertPricing from "./convert.pricing.ts";
import playgroundProcess from "./playground.process.ts";
import playgroundPage from "./playground.page.ts";
import webhooksEndpointsCreate from "./webhooks.endpoints.create.ts";
import webhooksEndpointsList from "./webhooks.endpoints.list.ts";
import webhooksEndpointsGet from "./webhooks.endpoints.get.ts";
import webhooksEndpointsUpdate from "./webhooks.endpoints.update.ts";
import webhooksEndpointsDelete from "./webhooks.endpoints.delete.ts";
import webhooksEndpointsRotateSecret from "./webhooks.endpoints.rotate-secret.ts";
import webhooksDeliveriesList from "./webhooks.deliveries.list.ts";
import webhooksDeliveriesRedeliver from "./webhooks.deliveries.redeliver.ts";
import webhooksDeliveriesSendTest from "./webhooks.deliveries.send-test.ts";

/** Every route of the edge, one file each. */
export const routes: ReadonlyArray<(app: App, deps: EdgeDeps) => void> = [
  health,
  openapi,
  apiKeysList,
  apiKeysCreate,
  apiKeysUpdate,
  apiKeysDelete,
  usageList,
  usageExport,
  usageSummary,
  accountGet,
  accountBalance,
  modelsList,
  modelsStats,
  modelsRecommended,
  modelsCategories,
  modelsGet,
  ocr,
  jobsCreate,
  jobsGet,
  jobsList,
  jobsPages,
  jobsResult,
  jobsEvents,
  jobsCancel,
  chatCompletions,
  convert,
  convertEstimate,
  convertPricing,
  playgroundProcess,
  playgroundPage,
  webhooksEndpointsCreate,
  webhooksEndpointsList,
  webhooksEndpointsGet,
  webhooksEndpointsUpdate,
  webhooksEndpointsDelete,
  webhooksEndpointsRotateSecret,
  webhooksDeliveriesList,
  webhooksDeliveriesRedeliver,
  webhooksDeliveriesSendTest,
];
