// The console's pages: one entry each. `path` may hold `:name` parameters (passed to the page as
// `params`); `role` hides the page from the nav and shows NotAllowed to users without it; `nav: false`
// keeps a page (a detail view) out of the nav. Add a page: a module in pages/, one entry here.
import { HomePage } from './pages/home.js';
import { UsersPage } from './pages/users.js';
import { ClientsPage } from './pages/clients.js';
import { SessionsPage } from './pages/sessions.js';
import { PortalsPage } from './pages/portals.js';
import { KeysPage } from './pages/keys.js';
import { WebhookEndpointsPage, WebhookEndpointPage as EndpointPage } from './pages/webhook-endpoints.js';
import { AuditPage } from './pages/audit.js';
import { DeliveriesPage } from './pages/deliveries.js';
import { DeliveryPage } from './pages/delivery.js';
import { EventsPage, EventPage } from './pages/events.js';
import { PortalHomePage } from './pages/portal.js';
import { PortalTestPage } from './pages/portal-test.js';
import { PortalDeliveriesPage } from './pages/portal-deliveries.js';
import { PortalCataloguePage } from './pages/portal-catalogue.js';
import { PortalVerifyPage } from './pages/portal-verify.js';
import { PortalEndpointsPage } from './pages/portal-endpoints.js';

export const ROUTES = [
  { path: '/console', title: 'Home', component: HomePage },
  { path: '/console/users', title: 'Users', component: UsersPage, role: 'admin' },
  { path: '/console/clients', title: 'Clients', component: ClientsPage, role: 'admin' },
  { path: '/console/sessions', title: 'Sessions and grants', component: SessionsPage, role: 'admin' },
  { path: '/console/portals', title: 'Portals', component: PortalsPage, role: 'admin' },
  { path: '/console/keys', title: 'Signing keys', component: KeysPage, role: 'admin' },
  { path: '/console/webhook-endpoints', title: 'Webhook endpoints', component: WebhookEndpointsPage, role: 'admin' },
  { path: '/console/webhook-endpoints/:id', title: 'Endpoint', component: EndpointPage, role: 'admin', nav: false },
  { path: '/console/audit', title: 'Audit trail', component: AuditPage, role: 'admin' },
  { path: '/console/deliveries', title: 'Delivery log', component: DeliveriesPage, role: 'admin' },
  { path: '/console/deliveries/:id', title: 'Delivery', component: DeliveryPage, role: 'admin', nav: false },
  { path: '/console/events', title: 'Event browser', component: EventsPage, role: 'admin' },
  { path: '/console/events/:id', title: 'Event', component: EventPage, role: 'admin', nav: false },
  // The integrator portal: `area: 'portal'` pages need a portal session (and are all a portal-link session sees);
  // the portal's entry is for both: an owner picks a client there, a portal session sees its client.
  { path: '/console/portal', title: 'Integrator portal', component: PortalHomePage, area: 'portal-entry' },
  { path: '/console/portal/endpoints', title: 'Endpoints', component: PortalEndpointsPage, area: 'portal' },
  { path: '/console/portal/test', title: 'Send a test event', component: PortalTestPage, area: 'portal' },
  { path: '/console/portal/deliveries', title: 'Deliveries', component: PortalDeliveriesPage, area: 'portal' },
  { path: '/console/portal/catalogue', title: 'Event catalogue', component: PortalCataloguePage, area: 'portal' },
  { path: '/console/portal/verify', title: 'Verify deliveries', component: PortalVerifyPage, area: 'portal' },
];

/** The route for a path and its parameters, or undefined. */
export function matchRoute(pathname) {
  const parts = pathname.replace(/\/+$/, '').split('/');
  for (const route of ROUTES) {
    const pattern = route.path.split('/');
    if (pattern.length !== parts.length) continue;
    const params = {};
    const ok = pattern.every((segment, i) => {
      if (segment.startsWith(':')) {
        params[segment.slice(1)] = decodeURIComponent(parts[i]);
        return true;
      }
      return segment === parts[i];
    });
    if (ok) return { route, params };
  }
  return undefined;
}

/** In a portal session only the portal's pages; outside one, no portal page but its entry (the client picker). */
export function allowed(route, session) {
  if (route.area === 'portal-entry') return true;
  if (session.portal) return route.area === 'portal';
  if (route.area === 'portal') return false;
  // The operator pages read what admin:read allows: an auditor sees them too, and the API refuses its writes.
  if (route.role === 'admin') return session.roles.includes('admin') || session.roles.includes('auditor');
  return !route.role || session.roles.includes(route.role);
}

/** The nav: the pages allowed, less detail pages; the portal's entry only outside a portal (its brand link leads there). */
export function inNav(route, session) {
  if (route.nav === false || !allowed(route, session)) return false;
  return !(route.area === 'portal-entry' && session.portal);
}
