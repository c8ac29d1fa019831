import { ListView } from './components/list-view';
import { EndpointPage } from './pages/endpoint-page';
import { EventsPage } from './pages/events-page';
import { LimitPage } from './pages/limit-page';
import { ENTITIES, LIMITS, LOANS, METHODS } from './pages/lists';
import { PrepareLoan } from './pages/prepare-loan';
import { WebhooksPage } from './pages/webhooks-page';
import type { Location } from './lib/router';

/** The portal's pages by path below /portal/; a page needing a scope the session lacks is not offered. */
export function Routes({ location, canWrite, canWebhooks }: { location: Location; canWrite: boolean; canWebhooks: boolean }) {
  const [first, second, ...rest] = location.route.split('/');
  if (rest.length === 0) {
    switch (first) {
      case '':
      case 'limits':
        return second ? <LimitPage uid={second} location={location} /> : <ListView key="limits" spec={LIMITS} location={location} />;
      case 'methods':
        if (!second) return <ListView key="methods" spec={METHODS} location={location} />;
        break;
      case 'entities':
        if (!second) return <ListView key="entities" spec={ENTITIES} location={location} />;
        break;
      case 'loans':
        if (!second) return <ListView key="loans" spec={LOANS} location={location} />;
        if (second === 'new') return canWrite ? <PrepareLoan /> : <NotAllowed scope="write" />;
        break;
      case 'events':
        if (!second) return <EventsPage location={location} />;
        break;
      case 'webhooks':
        if (!canWebhooks) return <NotAllowed scope="webhooks" />;
        return second ? <EndpointPage key={second} id={second} location={location} /> : <WebhooksPage />;
    }
  }
  return (
    <section aria-labelledby="page-title">
      <h1 id="page-title">No such page</h1>
      <p>Choose a page from the menu.</p>
    </section>
  );
}

function NotAllowed({ scope }: { scope: string }) {
  return (
    <section aria-labelledby="page-title">
      <h1 id="page-title">Not available in this session</h1>
      <p>
        This page needs a session opened with a <code>{scope}</code> key. Ask for a link made with such a key.
      </p>
    </section>
  );
}
