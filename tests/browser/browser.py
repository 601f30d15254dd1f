"""A real headless Chromium (Debian's chromium + chromium-driver) driven by
selenium, with the flags this machine needs, and screenshots."""

import os
import shutil
import tempfile
from urllib import parse

from selenium.common import exceptions as se_exc
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import Select
from selenium.webdriver.support.ui import WebDriverWait

CHROMIUM = '/usr/bin/chromium'
CHROMEDRIVER = '/usr/bin/chromedriver'
FLAGS = ('--headless=new', '--no-sandbox', '--disable-gpu', '--disable-quic',
         '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync',
         '--disable-dev-shm-usage', '--window-size=1500,1000')


class Browser(object):

    def __init__(self, base_url, shots_dir):
        # Missing binaries fail the tests (never a skip), saying what to do.
        for binary in (CHROMIUM, CHROMEDRIVER):
            if not os.access(binary, os.X_OK):
                raise AssertionError('%s is missing: run ./tools/install.sh '
                                     '(Debian chromium, chromium-driver)'
                                     % binary)
        # Selenium Manager must never try to download a driver (offline).
        os.environ['SE_OFFLINE'] = 'true'
        self.base_url = base_url
        self.shots_dir = shots_dir
        os.makedirs(shots_dir, exist_ok=True)
        self.profile = tempfile.mkdtemp(prefix='fedex-chromium-')
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in FLAGS + ('--user-data-dir=' + self.profile,):
            options.add_argument(flag)
        # The page's console, for js_errors().
        options.set_capability('goog:loggingPrefs', {'browser': 'ALL'})
        self.driver = webdriver.Chrome(service=Service(CHROMEDRIVER),
                                       options=options)
        self.driver.set_page_load_timeout(120)
        self.shots = []
        self.user = None        # logged in

    def quit(self):
        try:
            self.driver.quit()
        finally:
            shutil.rmtree(self.profile, ignore_errors=True)

    # --- pages --------------------------------------------------------------

    def get(self, path):
        self.driver.get(self.base_url + path)

    def login(self, user, password, home='/project/fedex_migrations/'):
        """Log in and land on ``home``.

        Not on Horizon's default Overview: it asks Nova, Cinder and Neutron
        for usage and quotas, 120 s on the loaded mini-cloud.
        """
        self.user = None
        self.driver.delete_all_cookies()
        self.get('/auth/login/?next=' + parse.quote(home))
        self.find('#id_username').send_keys(user)
        self.find('#id_password').send_keys(password)
        self.find('#loginBtn').click()
        self.wait(lambda d: '/auth/login' not in d.current_url, 120,
                  'login of %s' % user)
        self.user = user

    def shot(self, name, numbered=True):
        """A screenshot: ``NN-name.png``, or ``name.png`` for the docs."""
        path = os.path.join(self.shots_dir, '%02d-%s.png' % (
            len(self.shots) + 1, name) if numbered else name + '.png')
        self.driver.save_screenshot(path)
        self.shots.append(path)
        return path

    # --- elements -----------------------------------------------------------

    def find(self, css, timeout=30):
        return WebDriverWait(self.driver, timeout).until(
            ec.presence_of_element_located((By.CSS_SELECTOR, css)),
            'no element %s on %s' % (css, self.driver.current_url))

    def find_all(self, css):
        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def click(self, css, timeout=30):
        """Click ``css``, looked up again if the page replaced it.

        Horizon's row polling swaps a row for a new one every few seconds:
        an element found a moment ago may be gone (stale) when clicked.
        """
        def clicked(driver):
            try:
                el = ec.element_to_be_clickable(
                    (By.CSS_SELECTOR, css))(driver)
                if el:
                    el.click()
                    return True
            except se_exc.StaleElementReferenceException:
                pass
            return False
        WebDriverWait(self.driver, timeout, poll_frequency=0.2).until(
            clicked, 'cannot click %s on %s' % (css,
                                                self.driver.current_url))

    def _read_fresh(self, css, read, timeout):
        """``read(element)`` of ``css``, looked up again if replaced.

        A row's polling may swap it between the lookup and the read.
        """
        def attempt(driver):
            try:
                return [read(self.find(css, timeout))]
            except se_exc.StaleElementReferenceException:
                return False
        return WebDriverWait(self.driver, timeout, poll_frequency=0.2).until(
            attempt, 'no element %s on %s' % (css,
                                              self.driver.current_url))[0]

    def displayed(self, css, timeout=30):
        """Whether ``css`` is shown (looked up afresh if replaced)."""
        return self._read_fresh(css, lambda el: el.is_displayed(), timeout)

    def text_of(self, css, timeout=30):
        """The text of ``css`` (looked up afresh if replaced)."""
        return self._read_fresh(css, lambda el: el.text, timeout)

    def select(self, css, value):
        el = self.find(css)
        if el.is_displayed():
            Select(el).select_by_value(value)
            return
        # Horizon's theme hides the native <select> behind its themable
        # dropdown: choose there, as a user does.
        menu = el.find_element(
            By.XPATH, './ancestor::*[contains(@class, "themable-select")][1]')
        menu.find_element(By.CSS_SELECTOR, '.dropdown-toggle').click()
        options = menu.find_elements(
            By.CSS_SELECTOR, 'a[data-select-value="%s"]' % value)
        if not options:
            raise AssertionError('%s has no option %r on %s'
                                 % (css, value, self.driver.current_url))
        self.wait(lambda d: options[0].is_displayed(), 10,
                  'the menu of %s open' % css)
        options[0].click()
        self.wait(lambda d: el.get_attribute('value') == value, 10,
                  '%s set to %r' % (css, value))

    def fill(self, css, text):
        el = self.find(css)
        el.clear()
        el.send_keys(text)

    def wait(self, predicate, timeout, what):
        try:
            return WebDriverWait(self.driver, timeout, poll_frequency=1).until(
                predicate)
        except se_exc.TimeoutException:
            self.shot('timeout')
            raise AssertionError('timed out after %d s waiting for %s on %s'
                                 % (timeout, what, self.driver.current_url))

    def confirm_if_asked(self):
        """Click the confirmation of Horizon's confirm modal, if shown."""
        for button in self.find_all('.modal .modal-footer .btn-danger, '
                                    '.modal .modal-footer .btn-primary'):
            if button.is_displayed():
                button.click()
        return False

    def messages(self):
        """Texts of Horizon's messages (alerts) on the page."""
        return [e.text for e in self.find_all('.messages .alert')]

    def js_errors(self):
        """The console's errors since the last call (SEVERE entries)."""
        return [e['message'] for e in self.driver.get_log('browser')
                if e.get('level') == 'SEVERE']

    def js_started(self):
        """Whether Horizon's JavaScript started.

        The Angular application bootstrapped, the tables' row polling defined.
        """
        return self.driver.execute_script(
            'return !!(window.angular && window.horizon && '
            'horizon.datatables && horizon.datatables.update && '
            'angular.element(document.body).injector());')

    def text(self):
        return self.driver.find_element(By.TAG_NAME, 'body').text
