import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { href, onLinkClick, type Location } from '../lib/router';
import { hasScope, type Session } from '../lib/session';

interface NavItem {
  route: string;
  label: string;
  scope?: 'write' | 'webhooks';
}

const NAV: NavItem[] = [
  { route: 'limits', label: 'Credit limits' },
  { route: 'methods', label: 'Payment methods' },
  { route: 'entities', label: 'Entities' },
  { route: 'loans', label: 'Loans' },
  { route: 'loans/new', label: 'Prepare a loan', scope: 'write' },
  { route: 'events', label: 'Events' },
  { route: 'webhooks', label: 'Webhooks', scope: 'webhooks' },
];

function isCurrent(item: NavItem, route: string): boolean {
  if (item.route === 'limits') return route === '' || route === 'limits' || route.startsWith('limits/');
  if (item.route === 'loans') return route === 'loans';
  return route === item.route || route.startsWith(`${item.route}/`);
}

/** Landmarks, a skip link, and the menu (a disclosure on a narrow screen); focus moves to the page's heading on navigation. */
export function Layout({
  session,
  location,
  onSignOut,
  children,
}: {
  session: Session | null;
  location: Location;
  onSignOut: () => void;
  children: ComponentChildren;
}) {
  const main = useRef<HTMLElement>(null);
  const first = useRef(true);
  const [menuOpen, setMenuOpen] = useState(false);
  useEffect(() => {
    setMenuOpen(false);
    if (first.current) {
      first.current = false;
      return;
    }
    const heading = main.current?.querySelector('h1');
    if (heading) {
      heading.setAttribute('tabindex', '-1');
      heading.focus({ preventScroll: true });
    }
  }, [location.route]);
  useEffect(() => {
    document.title = `${main.current?.querySelector('h1')?.textContent ?? 'Portal'} · lending-api portal`;
  });
  return (
    <div class="shell" onClick={onLinkClick}>
      <a
        class="skip-link"
        href="#main"
        onClick={(event) => {
          // Focus the content without a #main in the address (the portal's own links are paths).
          event.preventDefault();
          main.current?.focus();
        }}
      >
        Skip to content
      </a>
      <header class="site-header">
        <a class="brand" href={href('')}>
          lending-api portal
        </a>
        {session ? (
          <nav aria-label="Portal" class="menu">
            <button type="button" class="menu-toggle" aria-expanded={menuOpen} aria-controls="menu-items" onClick={() => setMenuOpen(!menuOpen)}>
              Menu
            </button>
            <ul id="menu-items" class={menuOpen ? 'open' : undefined}>
              {NAV.filter((item) => !item.scope || hasScope(session, item.scope)).map((item) => (
                <li key={item.route}>
                  <a href={href(item.route)} aria-current={isCurrent(item, location.route) ? 'page' : undefined}>
                    {item.label}
                  </a>
                </li>
              ))}
            </ul>
          </nav>
        ) : null}
        {session ? (
          <p class="session">
            {session.organization_id} · {session.scopes.join(', ')} · until <time dateTime={session.expires_at}>{session.expires_at.slice(11, 16)} UTC</time>{' '}
            <button type="button" class="sign-out" onClick={onSignOut}>
              Sign out
            </button>
          </p>
        ) : null}
      </header>
      <main id="main" ref={main} tabIndex={-1}>
        {children}
      </main>
    </div>
  );
}
